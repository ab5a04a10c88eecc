//go:build linux

package engine

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/model"
)

// queued is how many bytes wait in c's receive queue (SIOCINQ).
func queued(t *testing.T, c *net.UDPConn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var qerr error
	if err := rc.Control(func(fd uintptr) { n, qerr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
		t.Fatal(err)
	}
	if qerr != nil {
		t.Fatal(qerr)
	}
	return n
}

// TestUDPTailDrops: a receiver whose full buffer drops the last datagrams
// of a test counts them lost, so its socket's drops never exceed its loss.
// The buffer is as small as the kernel allows and nobody reads while the
// sender sends, so everything past the first datagram or two is dropped
// (deterministically: the tail, with no gap after the last one kept). The
// receiver then reads what was kept, and the closing datagram, sent once
// the queue is empty so the socket keeps it, tells it the sender's count.
// Before the closing datagram's count was used, this run had 0 lost and
// every tail datagram dropped: drops over 100% of the loss.
func TestUDPTailDrops(t *testing.T) {
	rc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := rc.SetReadBuffer(1); err != nil { // the kernel's minimum
		t.Fatal(err)
	}
	sc, err := net.DialUDP("udp", nil, rc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()

	const sent = 200
	snd := NewUDPFlow(sc, true, true)
	buf := make([]byte, DefaultUDPLength)
	for seq := uint64(1); seq <= sent; seq++ {
		snd.putHeader(buf, 0, seq)
		if _, err := sc.Write(buf); err != nil {
			t.Fatal(err)
		}
	}

	e := &End{side: model.ServerSide, cfg: model.TestConfig{Protocol: model.UDP, Duration: 10 * time.Second}, t0: time.Now()}
	s := &Stream{role: model.Receiver, udp: NewUDPFlow(rc, true, true)}
	errc := make(chan error, 1)
	go func() { errc <- e.receiveUDP(s) }()
	waitFor(t, "the receiver to read what its buffer kept", func() bool {
		return s.udp.packets.Load() > 0 && queued(t, rc) == 0
	})
	fin := make([]byte, udpHeader64)
	snd.putHeader(fin, 0, udpFinFlag|sent)
	if _, err := sc.Write(fin); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the receiver did not end at the closing datagram")
	}

	d := s.udp.datagrams()
	got := s.moved.Load() / int64(len(buf))
	drops, ok := d.SocketDrops.Get()
	if !ok {
		t.Skip("the kernel reports no socket drops (SO_RXQ_OVFL)")
	}
	t.Logf("sent %d, received %d: packets %d, lost %d, socket drops %d", sent, got, d.Packets, d.Lost, drops)
	if got >= sent || drops == 0 {
		t.Fatalf("the test's premise failed: %d of %d received, %d dropped; the buffer was to overflow", got, sent, drops)
	}
	if d.Packets != sent || d.Lost != sent-got {
		t.Errorf("packets %d, lost %d; want %d sent, %d lost (sent less received, the tail included)", d.Packets, d.Lost, sent, sent-got)
	}
	if drops > d.Lost {
		t.Errorf("the socket dropped %d datagrams, more than the %d lost", drops, d.Lost)
	}
	if drops != sent-got {
		t.Errorf("the socket dropped %d datagrams; on loopback every one lost was its: want %d", drops, sent-got)
	}
}

// waitFor polls cond every 2 ms until it holds, and fails t if it does
// not within 10 s: a condition to wait on, where a sleep would guess.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after 10 s", what)
		}
	}
}
