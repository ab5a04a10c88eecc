package gate

import (
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
)

func addr(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000} }

// newGate is a gate under the built-in policy changed by set, started.
func newGate(t *testing.T, set func(*limits.Table)) *Gate {
	t.Helper()
	tab := limits.Builtin()
	if set != nil {
		set(&tab)
	}
	g := &Gate{Policy: &tab}
	g.Start()
	return g
}

func request(g *Gate, key, ip string, streams int) Request {
	a := addr(ip)
	return Request{Key: key, Client: a, Class: g.Class(a), Protocol: "test", Streams: streams, DataConns: true}
}

// Tests and streams are bounded per address and per server, a key is
// one running test's, and a release gives the place back.
func TestAdmitBounds(t *testing.T) {
	g := newGate(t, func(tab *limits.Table) {
		tab.Default.MaxTestsPerAddr = 2
		tab.Server.MaxTotalStreams = 10
	})
	a, err := g.Admit(request(g, "a", "192.0.2.1", 4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Admit(request(g, "a", "192.0.2.9", 1)); fault.CodeOf(err) != fault.Busy {
		t.Errorf("a key already running: %v", err)
	}
	b, err := g.Admit(request(g, "b", "192.0.2.1", 4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Admit(request(g, "c", "192.0.2.1", 1)); fault.CodeOf(err) != fault.Busy {
		t.Errorf("a third test from one address under a bound of 2: %v", err)
	}
	// IPv4 and its IPv4-mapped IPv6 form are one address.
	if _, err := g.Admit(request(g, "c", "::ffff:192.0.2.1", 1)); fault.CodeOf(err) != fault.Busy {
		t.Errorf("the same address, IPv4-mapped: %v", err)
	}
	if _, err := g.Admit(request(g, "d", "192.0.2.2", 3)); fault.CodeOf(err) != fault.Busy {
		t.Errorf("11 streams under a server bound of 10: %v", err)
	}
	if st := g.Status(); st.Running != 2 || st.Streams != 8 || st.Draining {
		t.Errorf("status %+v, want 2 tests, 8 streams", st)
	}
	a.Release()
	a.Release() // twice: nothing more
	if _, err := g.Admit(request(g, "d", "192.0.2.2", 3)); err != nil {
		t.Errorf("after a release: %v", err)
	}
	b.Release()
	if st := g.Status(); st.Running != 1 || st.Streams != 3 {
		t.Errorf("status %+v, want the one test left", st)
	}
}

// Connections not yet part of a test are bounded per address; an
// admitted test's data connections make room for themselves until they
// have arrived.
func TestPendingRoomForDataConnections(t *testing.T) {
	g := newGate(t, func(tab *limits.Table) { tab.Default.MaxPendingPerAddr = 2 })
	from := addr("198.51.100.7")
	var leaves []func()
	for range 2 {
		leave, ok := g.Enter(from)
		if !ok {
			t.Fatal("refused under the bound")
		}
		leaves = append(leaves, leave)
	}
	if _, ok := g.Enter(from); ok {
		t.Fatal("a third pending connection under a bound of 2")
	}
	if _, ok := g.Enter(addr("198.51.100.8")); !ok {
		t.Error("another address refused")
	}
	tk, err := g.Admit(request(g, "k", "198.51.100.7", 3))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, ok := g.Enter(from); !ok {
			t.Fatalf("data connection %d of 3 refused", i+1)
		}
	}
	if _, ok := g.Enter(from); ok {
		t.Error("a fourth connection beyond the test's 3 streams")
	}
	tk.Arrived()
	leaves[0]()
	leaves[0]() // once only
	if g.Refusals()["pending-per-address"] != 2 {
		t.Errorf("refusals %v", g.Refusals())
	}
	tk.Release()
}

// A denied class's connections are refused at the door.
func TestDeniedClass(t *testing.T) {
	g := newGate(t, func(tab *limits.Table) { tab.Default.Deny = true })
	if _, ok := g.Enter(addr("203.0.113.5")); ok {
		t.Error("a denied address entered")
	}
	if g.Refusals()["denied"] != 1 {
		t.Errorf("refusals %v", g.Refusals())
	}
}

// A one-test gate admits one test; Done closes when it is released.
func TestOneTest(t *testing.T) {
	tab := limits.Builtin()
	g := &Gate{Policy: &tab, OneTest: true}
	g.Start()
	tk, err := g.Admit(request(g, "one", "192.0.2.1", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Admit(request(g, "two", "192.0.2.2", 1)); fault.CodeOf(err) != fault.Busy {
		t.Errorf("a second test: %v", err)
	}
	select {
	case <-g.Done():
		t.Fatal("done while the test runs")
	default:
	}
	tk.Release()
	select {
	case <-g.Done():
	case <-time.After(time.Second):
		t.Fatal("not done after its one test")
	}
	if g.IdledOut() {
		t.Error("idled out without an idle timeout")
	}
}

// Lame duck refuses new tests and says when the last one has gone.
func TestLameDuck(t *testing.T) {
	g := newGate(t, nil)
	tk, err := g.Admit(request(g, "a", "192.0.2.1", 1))
	if err != nil {
		t.Fatal(err)
	}
	drained := g.LameDuck()
	if again := g.LameDuck(); again != drained {
		t.Error("a second call returned another channel")
	}
	if _, err := g.Admit(request(g, "b", "192.0.2.2", 1)); fault.CodeOf(err) != fault.Shutdown {
		t.Errorf("admitted while draining: %v", err)
	}
	if !g.Status().Draining {
		t.Error("status not draining")
	}
	select {
	case <-drained:
		t.Fatal("drained with a test running")
	default:
	}
	tk.Release()
	select {
	case <-drained:
	case <-time.After(time.Second):
		t.Fatal("not drained after the last test")
	}
}

// With an idle timeout and nobody coming, Done closes and says why; a
// test admitted in time keeps the gate open.
func TestIdleTimeout(t *testing.T) {
	tab := limits.Builtin()
	g := &Gate{Policy: &tab, IdleTimeout: 50 * time.Millisecond}
	g.Start()
	select {
	case <-g.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("an idle gate stayed open")
	}
	if !g.IdledOut() {
		t.Error("IdledOut false after the idle timeout")
	}
	if _, err := g.Admit(request(g, "late", "192.0.2.1", 1)); fault.CodeOf(err) != fault.Shutdown {
		t.Errorf("admitted after idling out: %v", err)
	}

	busy := &Gate{Policy: &tab, IdleTimeout: 50 * time.Millisecond}
	busy.Start()
	tk, err := busy.Admit(request(busy, "a", "192.0.2.1", 1))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // three idle timeouts with a test running
	select {
	case <-busy.Done():
		t.Fatal("idled out with a test running")
	default:
	}
	tk.Release()
}

// Subscribers hear each admission and end, in order, until they
// unsubscribe.
func TestSubscribers(t *testing.T) {
	g := newGate(t, nil)
	var first, second []string
	g.Subscribe(func(e Event) {
		what := map[Kind]string{Admitted: "admitted", Ended: "ended", Interval: "interval"}[e.Kind] + " " + e.Test.Key
		switch e.Kind {
		case Ended:
			what += " " + e.Record.Tool
		case Interval:
			what += fmt.Sprint(" ", e.Interval.Index)
		}
		first = append(first, what)
	})
	unsub := g.Subscribe(OnEnded(func(r Record) { second = append(second, r.Tool) }))
	tk, err := g.Admit(request(g, "a", "192.0.2.1", 1))
	if err != nil {
		t.Fatal(err)
	}
	tk.Interval(model.Interval{Index: 0})
	tk.Interval(model.Interval{Index: 1})
	tk.Ended(Record{Tool: "iperf3"})
	tk.Release()
	unsub()
	tk, err = g.Admit(request(g, "b", "192.0.2.1", 1))
	if err != nil {
		t.Fatal(err)
	}
	tk.Ended(Record{Tool: "tcpscope"})
	tk.Release()
	if want := []string{"admitted a", "interval a 0", "interval a 1", "ended a iperf3", "admitted b", "ended b tcpscope"}; !slices.Equal(first, want) {
		t.Errorf("first subscriber heard %q, want %q", first, want)
	}
	if want := []string{"iperf3"}; !slices.Equal(second, want) {
		t.Errorf("second subscriber heard %q, want %q (it unsubscribed)", second, want)
	}
}
