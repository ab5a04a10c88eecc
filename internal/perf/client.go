package perf

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/dial"
	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// Client runs tests against a tcpscope server.
type Client struct {
	Version string
	// Dialer opens the connections: address family, --bind, and the
	// connect timeout.
	Dialer dial.Dialer
	// SetupWarnings, when set, is asked about both ends' socket setups
	// once they are known, before Observer.Begin; what it says joins the
	// run's warnings. (The engine measures; what a setup means, and how
	// to fix it, is diagnose's: cli plugs in diagnose.BufferWarnings.)
	SetupWarnings func(cfg *model.TestConfig, streams []model.StreamInfo) []string
	Observer      model.Observer
	// Now is the wall clock for the run's start stamp (default time.Now).
	Now func() time.Time
	// Token is an access token for a server that requires one.
	Token string
	// TLS, when set, runs the control connection over TLS (the data
	// connections stay plain). Without a ServerName, the host of the
	// address is the name checked.
	TLS *tls.Config
}

// Run runs one test against the server at addr (host:port). When ctx ends
// the test stops early and the results so far are returned with Ended
// "interrupted".
func (c *Client) Run(ctx context.Context, addr string, cfg model.TestConfig) (*model.Run, error) {
	if err := engine.Normalize(&cfg); err != nil {
		return nil, err
	}
	run := c.newRun(addr, cfg)

	conn, ctl, w, err := c.handshake(ctx, addr, &cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	run.Remote.Version, run.Remote.Kernel = w.Version, w.Kernel
	run.Cookie = hex.EncodeToString(w.Cookie)

	open := c.openStreams
	if cfg.IsUDP() {
		open = c.openUDPStreams
	}
	if len(w.StreamKeys) != len(cfg.Directions()) {
		return nil, fault.Errorf(fault.Protocol, "use the same tcpscope release on both ends", "the server's welcome has %d stream keys for %d streams", len(w.StreamKeys), len(cfg.Directions()))
	}
	streams, tokens, err := open(ctx, addr, &cfg, w.StreamKeys, run)
	defer func() {
		for _, s := range streams {
			s.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	if err := ctl.send(&message{Type: msgStart, Start: &start{UDPTokens: tokens}}); err != nil {
		return nil, &fault.Error{Code: fault.Aborted, Msg: "send start", Err: err}
	}
	m, err := c.expect(ctl, msgStarted, addr)
	if err != nil {
		return nil, err
	}
	for i := range run.Streams {
		// Read back once the handshakes are long done, as the server does.
		setup, err := streams[i].Setup(cfg.TOS != 0)
		if err != nil {
			return nil, err
		}
		run.Streams[i].Client = &setup
		if i < len(m.Started.Setups) {
			run.Streams[i].Server = &m.Started.Setups[i]
		}
		if i < len(m.Started.Addrs) {
			run.Streams[i].ServerAddr = m.Started.Addrs[i]
		}
	}
	if c.SetupWarnings != nil {
		run.Warnings = c.SetupWarnings(&cfg, run.Streams)
	}
	if cfg.TOS != 0 && len(run.Streams) > 0 && run.Streams[0].Server != nil && run.Streams[0].Server.TOS == nil {
		// A server older than -S ignores the field it does not know.
		run.Warnings = append(run.Warnings, fmt.Sprintf("the server (%s) does not set the type of service: only this end's packets carry TOS %#x", w.Version, cfg.TOS))
	}
	if cfg.ServerCPU != nil && w.ServerCPU == nil {
		run.Warnings = append(run.Warnings, fmt.Sprintf("the server did not pin itself to CPU %d (-A): a tcpscope server lets clients pin it only when run with --allow-affinity, one test at a time", *cfg.ServerCPU))
	}
	if w.RateCap > 0 {
		run.ServerRateCap = w.RateCap
		run.Warnings = append(run.Warnings, fmt.Sprintf("the server holds this test to %v, all streams together (its limits for your address): the rate measured is at most that, whatever the path carries", w.RateCap))
	}
	return c.measure(ctx, ctl, cfg, streams, run)
}

// newRun starts the record of a test against addr, stamped now.
func (c *Client) newRun(addr string, cfg model.TestConfig) *model.Run {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return model.NewRun(addr, cfg, now(), c.Version)
}

// ErrIperf3Server: the server answered like a stock iperf3 server. The
// caller may run the test with iperf3's protocol instead (internal/iperf3).
var ErrIperf3Server = errors.New("the server is a stock iperf3")

// isIperf3Answer says whether the first byte a server answered with is a
// stock iperf3 server's state byte after a cookie: PARAM_EXCHANGE (9),
// ACCESS_DENIED (-1) or SERVER_ERROR (-2).
func isIperf3Answer(b byte) bool { return b == 9 || b == 0xff || b == 0xfe }

// handshake opens the control connection and is admitted to a test.
func (c *Client) handshake(ctx context.Context, addr string, cfg *model.TestConfig) (*net.TCPConn, *ctrl, *welcome, error) {
	began := time.Now()
	conn, err := c.Dialer.TCP(ctx, addr, nil, "")
	if err != nil {
		return nil, nil, nil, err
	}
	fail := func(err error) (*net.TCPConn, *ctrl, *welcome, error) {
		conn.Close()
		return nil, nil, nil, err
	}
	var ctlConn net.Conn = conn
	if c.TLS != nil {
		tc, err := c.startTLS(ctx, conn, addr, c.Dialer.AnswerWait(began))
		if err != nil {
			return fail(err)
		}
		ctlConn = tc
	}
	ctl := newCtrl(ctlConn, maxMessage)
	if _, err := ctlConn.Write([]byte(controlMagic)); err != nil {
		return fail(helloFailed(err, addr))
	}
	if err := ctl.send(&message{Type: msgHello, Hello: &hello{Protocol: ProtocolVersion, Version: c.Version, Config: *cfg, Token: c.Token}}); err != nil {
		return fail(helloFailed(err, addr))
	}
	// A tcpscope server's first message starts with its length's high
	// byte, 0 for any message it sends. A stock iperf3 server took our
	// first 37 bytes for its cookie and answers with one state byte:
	// PARAM_EXCHANGE, or busy, or an error.
	_ = ctlConn.SetReadDeadline(time.Now().Add(c.Dialer.AnswerWait(began)))
	if b, err := ctl.r.Peek(1); c.TLS == nil && err == nil && isIperf3Answer(b[0]) {
		return fail(ErrIperf3Server)
	}
	m, err := c.expectWithin(ctl, msgWelcome, addr, c.Dialer.AnswerWait(began))
	if err != nil {
		if c.Dialer.ConnectTimeout > 0 && fault.CodeOf(err) == fault.Timeout {
			err = fault.Errorf(fault.Timeout, fmt.Sprintf("is %s a tcpscope or iperf3 server, and not overloaded? a longer {connect_timeout} waits more", addr),
				"no answer from %s within the connect timeout of %v", addr, c.Dialer.ConnectTimeout)
		}
		return fail(err)
	}
	if m.Welcome.Protocol != ProtocolVersion {
		return fail(fault.Errorf(fault.Version, "use the same tcpscope release on both ends",
			"server %s speaks protocol %d, this client %d", m.Welcome.Version, m.Welcome.Protocol, ProtocolVersion))
	}
	return conn, ctl, m.Welcome, nil
}

// helloFailed is the error of a hello the server would not take: it
// closed or reset the connection as it arrived (broken pipe, reset), as
// a server that is not tcpscope's may, or one over its limits of
// connections not yet in a test.
func helloFailed(err error, addr string) error {
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) {
		return &fault.Error{Code: fault.Protocol, Msg: addr + " closed the connection at hello", Err: err,
			Hint: "is " + addr + " a tcpscope server? One over its --max-pending limits for your address closes at once too: wait and run again"}
	}
	return &fault.Error{Code: fault.Aborted, Msg: "send hello to " + addr, Err: err,
		Hint: "the connection failed as it opened; run again, and check the path to " + addr}
}

// startTLS runs the TLS handshake on the control connection.
func (c *Client) startTLS(ctx context.Context, conn *net.TCPConn, addr string, wait time.Duration) (*tls.Conn, error) {
	cfg := c.TLS.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS13
	}
	tc := tls.Client(conn, cfg)
	hctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		var ce *tls.CertificateVerificationError
		hint := "is " + addr + " a tcpscope server with TLS (--tls-cert)?"
		if errors.As(err, &ce) || strings.Contains(err.Error(), "pin") {
			hint = "check the server's name and certificate, or pin it with {tls_pin}; the server prints its pin at start"
		}
		return nil, &fault.Error{Code: fault.TLS, Msg: "TLS with " + addr, Hint: hint, Err: err}
	}
	return tc, nil
}

// openStreams dials the data connections, one per stream, and records
// them in run. The streams opened so far are returned even on error, for
// the caller to close.
func (c *Client) openStreams(ctx context.Context, addr string, cfg *model.TestConfig, keys [][]byte, run *model.Run) ([]*engine.Stream, [][]byte, error) {
	dirs := cfg.Directions()
	streams := make([]*engine.Stream, 0, len(dirs))
	for i, d := range dirs {
		role := model.RoleOf(model.ClientSide, d)
		tc, err := c.Dialer.TCP(ctx, addr, cfg, role)
		if err != nil {
			return streams, nil, err
		}
		streams = append(streams, engine.NewTCPStream(i, role, tc))
		_ = tc.SetNoDelay(cfg.NoDelay)
		if _, err := tc.Write(dataPreamble(keys[i], i)); err != nil {
			return streams, nil, &fault.Error{Code: fault.Aborted, Msg: fmt.Sprintf("open stream %d", i), Err: err}
		}
		run.Streams = append(run.Streams, model.StreamInfo{ID: i, Direction: d, ClientAddr: tc.LocalAddr().String()})
	}
	return streams, nil, nil
}

// measure runs the client's end while the control connection brings the
// server's intervals, a request to stop (shutdown, limit) and finally the
// server's totals; then it completes run.
func (c *Client) measure(ctx context.Context, ctl *ctrl, cfg model.TestConfig, streams []*engine.Stream, run *model.Run) (*model.Run, error) {
	var obsMu sync.Mutex
	observe := func(f func(model.Observer)) {
		if c.Observer != nil {
			obsMu.Lock()
			f(c.Observer)
			obsMu.Unlock()
		}
	}
	observe(func(o model.Observer) { o.Begin(run) })

	e := engine.NewEnd(model.ClientSide, cfg, streams, func(iv model.Interval) {
		observe(func(o model.Observer) { o.Interval(model.ClientSide, &iv) })
	}, engine.EndOptions{
		// Read on the caller's thread: in a lab host it is the host's
		// network namespace's.
		Settings: tcpinfo.Settings(),
	})
	tctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v := &serverView{ended: "complete", done: make(chan *model.EndReport, 1), failed: make(chan error, 1)}
	go v.read(ctl, e, observe, cancel)
	interrupt := context.AfterFunc(ctx, func() {
		v.setEnded("interrupted")
		_ = ctl.send(&message{Type: msgStop, Stop: &stop{Reason: "interrupted"}})
		e.Stop()
	})
	defer interrupt()

	runErr := e.Run(tctx)
	run.Client = e.Report(c.Version)
	done, runErr := v.await(runErr)
	v.mu.Lock()
	run.Ended = v.ended
	run.Remote.Intervals = v.intervals
	v.mu.Unlock()
	if done != nil {
		run.Remote.Totals = done.Totals
		run.Remote.Version, run.Remote.Kernel = done.Version, done.Kernel
		run.Remote.CPU = done.CPU // nil from a server before it reported CPU use
		run.Remote.CPUs, run.Remote.CPUQuota = done.CPUs, done.CPUQuota
		run.Remote.Settings = done.Settings
		_ = ctl.send(&message{Type: msgBye})
	} else {
		run.Warnings = append(run.Warnings, "the server's report is missing: its totals are absent and the summary shows the client's view only")
	}
	run.Summary = model.Summarize(run)
	if runErr != nil {
		run.Ended = "aborted"
		if fault.CodeOf(runErr) == "" {
			runErr = &fault.Error{Code: fault.Aborted, Msg: "test broke off", Hint: "the server or the path failed mid-test; see the server's log", Err: runErr}
		}
		return run, runErr
	}
	return run, nil
}

// serverView is what the server says while the client's end runs: its
// intervals, how the test ended (the first reason to stop is the one
// recorded, as on the server), and at last its totals or an error.
type serverView struct {
	mu        sync.Mutex
	intervals []model.Interval
	ended     string
	done      chan *model.EndReport
	failed    chan error
}

func (v *serverView) setEnded(how string) {
	v.mu.Lock()
	if v.ended == "complete" {
		v.ended = how
	}
	v.mu.Unlock()
}

// read reads the control connection until the server's totals or an
// error; a stop from the server stops e, a broken connection cancels
// the test.
func (v *serverView) read(ctl *ctrl, e *engine.End, observe func(func(model.Observer)), cancel func()) {
	for {
		m, err := ctl.recv(0)
		if err != nil {
			v.failed <- err
			cancel()
			return
		}
		switch m.Type {
		case msgInterval:
			v.mu.Lock()
			v.intervals = append(v.intervals, *m.Interval)
			v.mu.Unlock()
			observe(func(o model.Observer) { o.Interval(model.ServerSide, m.Interval) })
		case msgStop:
			v.setEnded(m.Stop.Reason)
			e.Stop()
		case msgError:
			v.failed <- &fault.Error{Code: m.Error.Code, Msg: "server: " + m.Error.Message, Hint: m.Error.Hint}
			cancel()
			return
		case msgDone:
			v.done <- m.Done
			return
		}
	}
}

// await waits for the server's totals once the client's end has run
// (runErr: how it ended), and returns them (nil if they never came)
// with the test's error. A client whose own streams failed (a dead path)
// waits only briefly: the server may be stuck on the same path.
func (v *serverView) await(runErr error) (*model.EndReport, error) {
	wait := engine.FinishGrace
	if runErr != nil {
		wait = engine.StallLimit
	}
	select {
	case done := <-v.done:
		return done, runErr
	case err := <-v.failed:
		if runErr == nil {
			runErr = err
		}
	case <-time.After(wait):
		if runErr == nil {
			runErr = fault.Errorf(fault.Timeout, "the server may be overloaded", "server did not send its results")
		}
	}
	return nil, runErr
}

// expect reads the next control message, turning a server error or an
// unexpected answer into an Error.
func (c *Client) expect(ctl *ctrl, want, addr string) (*message, error) {
	return c.expectWithin(ctl, want, addr, handshakeTimeout)
}

// expectWithin is expect waiting at most wait.
func (c *Client) expectWithin(ctl *ctrl, want, addr string, wait time.Duration) (*message, error) {
	m, err := ctl.recv(wait)
	if err != nil {
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			return nil, fault.Errorf(fault.Timeout, "is "+addr+" a tcpscope server?", "no answer from %s", addr)
		case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
			return nil, fault.Errorf(fault.Protocol, "is "+addr+" a tcpscope server? One over its --max-pending limits for your address closes at once too: wait and run again", "%s closed the connection", addr)
		case errors.Is(err, errProtocol):
			return nil, &fault.Error{Code: fault.Protocol, Msg: addr + " does not speak tcpscope's protocol", Hint: "is it a tcpscope or iperf3 server?", Err: err}
		}
		return nil, &fault.Error{Code: fault.Aborted, Msg: "control connection", Err: err}
	}
	if m.Type == msgError {
		return nil, &fault.Error{Code: m.Error.Code, Msg: "server: " + m.Error.Message, Hint: m.Error.Hint}
	}
	if m.Type != want {
		return nil, fault.Errorf(fault.Protocol, "", "expected %s from the server, got %s", want, m.Type)
	}
	return m, nil
}
