package perf

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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const setup, omit = 200 * time.Millisecond, 300 * time.Millisecond
	cfg := model.TestConfig{Duration: time.Second, Omit: omit, Interval: 100 * time.Millisecond}
	s := NewTCPStream(0, model.Receiver, c.(*net.TCPConn))
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
		_ = peer.(*net.TCPConn).CloseWrite()
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
