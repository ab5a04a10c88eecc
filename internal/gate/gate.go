package gate

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
)

// Gate admits a server's tests under its policy, whatever their
// protocol. The zero value is not ready: set Policy, then Start.
type Gate struct {
	// Policy is the server's: its bounds and its classes of client
	// networks.
	Policy *limits.Table
	// OneTest admits one test only, as iperf3 -s -1: Done closes once it
	// is released. Refusals before admission do not use it up.
	OneTest bool
	// IdleTimeout, when set, closes Done once no test has been admitted
	// for that long (from Start, or the release of the last test).
	IdleTimeout time.Duration
	Logger      *slog.Logger

	once sync.Once
	mu   sync.Mutex
	// tests are the admitted tests, by key.
	tests map[string]*Ticket
	// pending counts, per client address (addrKey) and in all, the
	// connections not yet part of a test (Enter).
	pending      map[string]int
	pendingTotal int
	// expected counts, per client address and in all, the data
	// connections of admitted tests that have not all arrived: they are
	// pending too until read, and a test of 128 streams each way opens
	// 256 at once. The pending bounds grow by them.
	expected      map[string]int
	expectedTotal int
	// draining: lame-duck mode; drained is closed once a draining gate
	// has no test.
	draining bool
	drained  chan struct{}
	// served: a OneTest gate has admitted its test.
	served bool
	// idleGen counts the starts and stops of the idle timer: a timer
	// that fires after another start or stop is stale.
	idleGen  uint64
	idledOut bool
	done     chan struct{}
	doneOnce sync.Once
	refusals refusalLog
	// share counts the streams of all admitted tests, for GOMAXPROCS to
	// follow them (fair.go).
	share fairShare
	subs  []subscriber
	subID int
}

// init makes the gate's state, once.
func (g *Gate) init() {
	g.once.Do(func() {
		if g.Logger == nil {
			g.Logger = slog.New(slog.DiscardHandler)
		}
		if g.Policy == nil {
			t := limits.Builtin()
			g.Policy = &t
		}
		g.tests = map[string]*Ticket{}
		g.pending = map[string]int{}
		g.expected = map[string]int{}
		g.drained = make(chan struct{})
		g.done = make(chan struct{})
		g.refusals.logger = g.Logger
	})
}

// Start readies the gate and starts its idle timer; the server calls it
// as it begins to serve.
func (g *Gate) Start() {
	g.init()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.startIdleLocked()
}

// Done is closed once the gate will admit nothing more of its own
// accord: a OneTest gate's test was released, or IdleTimeout passed
// with no test. The server then stops accepting.
func (g *Gate) Done() <-chan struct{} {
	g.init()
	return g.done
}

// IdledOut reports whether Done closed for IdleTimeout.
func (g *Gate) IdledOut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.idledOut
}

func (g *Gate) finish() { g.doneOnce.Do(func() { close(g.done) }) }

// startIdleLocked starts the idle timer, when there is one: it closes
// Done unless a test is admitted first. Called with g.mu held.
func (g *Gate) startIdleLocked() {
	if g.IdleTimeout <= 0 {
		return
	}
	g.idleGen++
	gen := g.idleGen
	time.AfterFunc(g.IdleTimeout, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.idleGen != gen || len(g.tests) > 0 || g.served {
			return // a test came since: this timer is stale
		}
		// Admit nothing more (a hello racing the timer hears "going
		// away"), then stop accepting.
		g.idledOut, g.draining = true, true
		g.Logger.Info("idle timeout: no test came", "idle", g.IdleTimeout.String())
		g.finish()
	})
}

// addrKey is a client address as the limits count it: IPv4-mapped IPv6
// and IPv4 alike.
func addrKey(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return string(ta.IP.To16())
	}
	if ua, ok := a.(*net.UDPAddr); ok {
		return string(ua.IP.To16())
	}
	return a.String()
}

// Class is the policy's class for a client address.
func (g *Gate) Class(a net.Addr) *limits.Class {
	g.init()
	var ip netip.Addr
	switch ta := a.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(ta.IP)
	case *net.UDPAddr:
		ip, _ = netip.AddrFromSlice(ta.IP)
	}
	return g.Policy.Match(ip)
}

// Enter counts a new connection from remote as pending, or says it is
// denied, or over its class's MaxPendingPerAddr or the server's
// MaxPending (then it is to be closed at once, before it costs more than
// its descriptor). leave ends its pending time, once: when it has become
// part of a test, or ends. (frontdoor.Door's Enter.)
func (g *Gate) Enter(remote net.Addr) (leave func(), ok bool) {
	cl := g.Class(remote)
	if cl.Deny {
		g.refusals.note("denied", remote, "class "+cl.Name+" is denied: closed at once")
		return nil, false
	}
	key := addrKey(remote)
	g.mu.Lock()
	over := ""
	switch {
	case g.pending[key] >= cl.MaxPendingPerAddr+g.expected[key]:
		over = "pending-per-address"
	case g.pendingTotal >= g.Policy.Server.MaxPending+g.expectedTotal:
		over = "pending"
	default:
		g.pending[key]++
		g.pendingTotal++
	}
	g.mu.Unlock()
	if over != "" {
		g.refusals.note(over, remote, "too many connections not yet part of a test: closed at once")
		return nil, false
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.pending[key]--; g.pending[key] <= 0 {
				delete(g.pending, key)
			}
			g.pendingTotal--
			g.mu.Unlock()
		})
	}, true
}

// Request is a test that asks to be admitted.
type Request struct {
	// Key names the test while it runs (a native or iperf3 cookie):
	// two running tests never share one.
	Key string
	// Client is the address of the test's control connection.
	Client net.Addr
	// Class is the client's class (Class).
	Class *limits.Class
	// Protocol names the test's protocol ("tcpscope", "iperf3", ...),
	// for subscribers.
	Protocol string
	// Streams is how many streams it runs.
	Streams int
	// DataConns: its streams arrive as connections of their own, which
	// the pending bounds make room for until they have (Ticket.Arrived).
	DataConns bool
}

// Ticket is an admitted test's place at the gate, held until Release.
type Ticket struct {
	Request
	// Admitted is when the gate admitted it.
	Admitted time.Time

	g *Gate
	// expecting: its data connections are counted as expected (under
	// g.mu), until Arrived.
	expecting bool
	unshare   func()
	released  sync.Once
}

// Admit admits a test, or says why not (a fault.Error: busy, shutdown).
// The caller runs it, then calls the ticket's Release.
func (g *Gate) Admit(r Request) (*Ticket, error) {
	g.init()
	t := &Ticket{Request: r, Admitted: time.Now(), g: g}
	g.mu.Lock()
	if err := g.admitLocked(t); err != nil {
		g.mu.Unlock()
		return nil, err
	}
	g.mu.Unlock()
	g.publish(Event{Kind: Admitted, Test: t})
	return t, nil
}

// admitLocked checks t against the server's and its class's bounds and
// registers it. Called with g.mu held.
func (g *Gate) admitLocked(t *Ticket) error {
	if g.draining {
		return fault.Errorf(fault.Shutdown, "use another server, or this one later", "server going away (lame duck): admitting no new tests")
	}
	if g.OneTest && g.served {
		return fault.Errorf(fault.Busy, "try another server: this one (server -1) ends after the test it runs",
			"server busy: it serves one test and has it")
	}
	if g.tests[t.Key] != nil {
		// iperf3's client picks the cookie: control connections that
		// share one were each read before any was admitted. Counted as
		// one test they walked around --max-tests.
		return fault.Errorf(fault.Busy, "each test needs a cookie of its own", "a test with this cookie is already running")
	}
	srv := g.Policy.Server
	if n := len(g.tests); n >= srv.MaxTests {
		return fault.Errorf(fault.Busy, "run again when a test has finished, or raise the server's --max-tests",
			"server busy (%d running, limit %d)", n, srv.MaxTests)
	}
	key := addrKey(t.Client)
	mine, classTests, streams, classStreams := 0, 0, 0, 0
	for _, r := range g.tests {
		if addrKey(r.Client) == key {
			mine++
		}
		streams += r.Streams
		if r.Class == t.Class {
			classTests++
			classStreams += r.Streams
		}
	}
	cl := t.Class
	switch {
	case mine >= cl.MaxTestsPerAddr:
		return fault.Errorf(fault.Busy, "run again when one of them has finished",
			"%d tests from your address are running (limit %d)", mine, cl.MaxTestsPerAddr)
	case classTests >= cl.TestsBound(srv):
		return fault.Errorf(fault.Busy, "run again when a test has finished",
			"server busy for your network (%d of its tests running, limit %d)", classTests, cl.TestsBound(srv))
	case streams+t.Streams > srv.MaxTotalStreams:
		return fault.Errorf(fault.Busy, "use fewer streams, or run again later, or raise the server's --max-total-streams",
			"server busy (%d streams running, limit %d)", streams, srv.MaxTotalStreams)
	case classStreams+t.Streams > cl.StreamsBound(srv):
		return fault.Errorf(fault.Busy, "use fewer streams, or run again later",
			"server busy for your network (%d of its streams running, limit %d)", classStreams, cl.StreamsBound(srv))
	}
	g.tests[t.Key] = t
	t.unshare = g.share.join(t.Streams)
	g.served = g.OneTest
	g.idleGen++ // stops the idle timer: a test runs
	if t.DataConns {
		g.expected[key] += t.Streams
		g.expectedTotal += t.Streams
		t.expecting = true
	}
	return nil
}

// Arrived ends the room the pending bounds made for the test's data
// connections: they have all arrived, or never will.
func (t *Ticket) Arrived() {
	t.g.mu.Lock()
	defer t.g.mu.Unlock()
	t.arrivedLocked()
}

func (t *Ticket) arrivedLocked() {
	if !t.expecting {
		return
	}
	t.expecting = false
	g, key := t.g, addrKey(t.Client)
	if g.expected[key] -= t.Streams; g.expected[key] <= 0 {
		delete(g.expected, key)
	}
	g.expectedTotal -= t.Streams
}

// Interval tells the gate's subscribers of an interval of the server's
// end of the test, as it is sampled.
func (t *Ticket) Interval(iv model.Interval) {
	t.g.publish(Event{Kind: Interval, Test: t, Interval: &iv})
}

// Ended tells the gate's subscribers how the test went: what the server
// saw of it.
func (t *Ticket) Ended(rec Record) {
	t.g.publish(Event{Kind: Ended, Test: t, Record: &rec})
}

// Release gives the test's place back. Calling it again does nothing.
func (t *Ticket) Release() {
	t.released.Do(func() {
		g := t.g
		g.mu.Lock()
		delete(g.tests, t.Key)
		t.unshare()
		t.arrivedLocked()
		g.closeIfDrainedLocked()
		if len(g.tests) == 0 {
			g.startIdleLocked()
		}
		g.mu.Unlock()
		if g.OneTest {
			g.finish() // its one test is over: admit no more
		}
	})
}

// Status is what a server is doing, for a health check.
type Status struct {
	// Draining: the server is in lame-duck mode, admitting no new test
	// and ending once the running ones have.
	Draining bool
	Running  int // tests admitted and not yet released
	Streams  int // their streams
}

// Status says what the gate holds now.
func (g *Gate) Status() Status {
	g.init()
	g.mu.Lock()
	defer g.mu.Unlock()
	st := Status{Draining: g.draining, Running: len(g.tests)}
	for _, t := range g.tests {
		st.Streams += t.Streams
	}
	return st
}

// LameDuck stops the gate admitting tests; those running finish as
// planned. The channel it returns is closed once none is running: an
// operator then stops the server, which a load balancer stopped sending
// clients to as soon as the health check said "draining". Calling it
// again returns the same channel.
func (g *Gate) LameDuck() <-chan struct{} {
	g.init()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.draining {
		g.draining = true
		g.Logger.Info("lame duck: admitting no new tests", "running", len(g.tests))
	}
	g.closeIfDrainedLocked()
	return g.drained
}

// closeIfDrainedLocked closes drained once a draining gate has no test.
// Called with g.mu held.
func (g *Gate) closeIfDrainedLocked() {
	if !g.draining || len(g.tests) > 0 {
		return
	}
	select {
	case <-g.drained:
	default:
		close(g.drained)
	}
}
