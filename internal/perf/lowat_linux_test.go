package perf

import (
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// A stop drops a receiver's mark and so wakes a reader that waits with
// fewer bytes queued than the mark: an iperf3 peer ends a test on its
// control connection, with no end of file to wake it, and its last
// bytes must still be read.
func TestStopDropsLowat(t *testing.T) {
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
	s := NewTCPStream(0, model.Receiver, c.(*net.TCPConn))
	e := newEnd(model.ServerSide, model.TestConfig{}, []*Stream{s}, nil)
	if err := tcpinfo.SetRcvLowat(s.conn, 64*model.KiB); err != nil {
		t.Fatal(err)
	}
	s.lowat.Store(int64(64 * model.KiB))

	got := make(chan int, 1)
	go func() {
		buf := make([]byte, 4096)
		n, _ := c.Read(buf) // parks: nothing is queued yet
		got <- n
	}()
	// Once the reader waits, 1000 bytes arrive: under the mark.
	deadline := time.Now().Add(5 * time.Second)
	for !readerParked(t) {
		if time.Now().After(deadline) {
			t.Fatal("the reader never waited")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := peer.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		t.Fatalf("read %d B under the mark before the stop: the mark was not set", n)
	case <-time.After(200 * time.Millisecond):
	}
	e.stop()
	select {
	case n := <-got:
		if n != 1000 {
			t.Errorf("read %d B after the stop, want 1000", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stop left the reader waiting under its mark")
	}
	if m := s.lowat.Load(); m != 0 {
		t.Errorf("stream's mark after the stop: %d, want 0", m)
	}
}

// readerParked reports whether the test's reader goroutine waits on
// the poller (the runtime's "IO wait"): only then do bytes that arrive
// meet the mark rather than an immediate read.
func readerParked(t *testing.T) bool {
	t.Helper()
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[IO wait") && strings.Contains(g, "TestStopDropsLowat.func") {
			return true
		}
	}
	return false
}
