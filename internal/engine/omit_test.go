package engine

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// The omit mark falls at the start plus -O on the end's clock, however
// late the end's sampler starts: a server starts its clock when it tells
// an iperf3 client the test runs, then sets its streams up (tens of
// milliseconds when busy). A mark taken that much later counted fewer
// bytes than the client's results and left the server waiting for them.
func TestOmitMarkOnEndClock(t *testing.T) {
	c, peer := tcpPair(t)
	const setup, omit = 200 * time.Millisecond, 300 * time.Millisecond
	cfg := model.TestConfig{Duration: time.Second, Omit: omit, Interval: 100 * time.Millisecond}
	s := NewTCPStream(0, model.Receiver, c)
	e := NewEnd(model.ServerSide, cfg, []*Stream{s}, func(model.Interval) {}, EndOptions{Start: time.Now().Add(-setup)})
	go func() {
		// The peer sends until the test's planned end, then closes.
		buf := make([]byte, 16*1024)
		for until := time.Now().Add(cfg.Duration - setup); time.Now().Before(until); {
			if _, err := peer.Write(buf); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
		_ = peer.CloseWrite()
		_, _ = io.Copy(io.Discard, peer)
	}()
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	at := e.omitSample[0].At
	t.Logf("omit mark at %v on the end's clock (-O %v, sampler started %v late)", at, omit, setup)
	// A timer fires late on a loaded machine, never early; the bug put
	// the mark a whole setup (200 ms) late.
	if at < omit || at > omit+setup/2 {
		t.Errorf("omit mark at %v, want at -O (%v)", at, omit)
	}
}

// The bytes at the omit mark are the stream's own count when the mark
// passed, however late the sampler gets to its timer: a busy machine
// delayed it, the bytes moved meanwhile fell out of the measured period,
// and an iperf3 server then waited out its stall timer for counts it
// had. Here the sampler is held 150 ms from its last interval before the
// mark (its interval callback blocks, as a slow consumer of intervals
// would), so its timer for the mark fires some 50 ms late.
func TestOmitMarkWhileSamplerLate(t *testing.T) {
	c, peer := tcpPair(t)
	const omit, hold = 300 * time.Millisecond, 150 * time.Millisecond
	cfg := model.TestConfig{Duration: 700 * time.Millisecond, Omit: omit, Interval: 100 * time.Millisecond}
	s := NewTCPStream(0, model.Receiver, c)
	var e *End
	held := false
	e = NewEnd(model.ServerSide, cfg, []*Stream{s}, func(model.Interval) {
		if now := e.since(); !held && now >= omit-hold && now < omit {
			held = true
			time.Sleep(hold)
		}
	}, EndOptions{Start: time.Now()})
	go func() {
		buf := make([]byte, 16*1024)
		for until := time.Now().Add(omit + cfg.Duration); time.Now().Before(until); {
			if _, err := peer.Write(buf); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
		_ = peer.CloseWrite()
		_, _ = io.Copy(io.Discard, peer)
	}()
	// What the stream had read just before and just after the mark, as
	// this test saw it: the mark's count must lie between.
	before, after := int64(-1), int64(-1)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for after < 0 {
			// A count read between two clock reads on one side of the
			// mark was read on that side; one that straddles it is not
			// used.
			t1 := e.since()
			m := s.moved.Load()
			t2 := e.since()
			switch {
			case t2 < omit:
				before = m
			case t1 >= omit:
				after = m
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-watched
	got := e.omitBytes[0].Load()
	t.Logf("held the sampler: %v; at the mark %d B (read %d B before it, %d B after)", held, got, before, after)
	if !held {
		t.Skip("the sampler's intervals never came before the mark: nothing was held")
	}
	if got < before || got > after {
		t.Errorf("the omit mark counted %d B; the stream had read %d B just before the mark and %d B just after", got, before, after)
	}
}

// tcpPair is a connected pair on loopback, both ends closed when the
// test ends: the end a test's End receives on, and its peer.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = peer.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn), peer.(*net.TCPConn)
}
