package sockdiag

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

func TestBytecodeLayout(t *testing.T) {
	f, _ := Parse("dport 5201 src 127.0.0.0/8")
	bc, err := f.Bytecode()
	if err != nil {
		t.Fatal(err)
	}
	// D_GE (8 bytes), D_LE (8), S_COND with a 4-byte address (16): 32.
	if len(bc) != 32 {
		t.Fatalf("%d bytes: %x", len(bc), bc)
	}
	for off, want := range map[int][3]int{0: {bcDGE, 8, 36}, 8: {bcDLE, 8, 28}, 16: {bcSCond, 16, 20}} {
		if int(bc[off]) != want[0] || int(bc[off+1]) != want[1] || int(binary.NativeEndian.Uint16(bc[off+2:])) != want[2] {
			t.Errorf("op at %d = %x, want code %d yes %d no %d", off, bc[off:off+4], want[0], want[1], want[2])
		}
	}
	if port := binary.NativeEndian.Uint16(bc[6:]); port != 5201 {
		t.Errorf("port %d", port)
	}
	if bc[20] != 2 || bc[21] != 8 || int32(binary.NativeEndian.Uint32(bc[24:])) != -1 || !slices.Equal(bc[28:32], []byte{127, 0, 0, 0}) {
		t.Errorf("hostcond %x", bc[20:])
	}
	if bc, _ := (Filter{}).Bytecode(); bc != nil {
		t.Error("no conditions, some bytecode")
	}
}

// loopbackTransfer connects to a fresh listener and writes 100 kB from
// client to server, which the server leaves unread; it returns once the
// client's kernel has them acknowledged, so every socket's counters hold
// them.
func loopbackTransfer(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			acc <- nil
			return
		}
		acc <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-acc
	t.Cleanup(func() { client.Close(); server.Close() })
	if _, err := client.Write(make([]byte, 100_000)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the 100 kB acknowledged", func() bool {
		s, err := tcpinfo.Read(client.(*net.TCPConn))
		return err == nil && s.BytesAcked.V >= 100_000
	})
	return client, server
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// The real kernel: both ends of a loopback connection are listed with
// their tcp_info, the filters are applied by the kernel, and the owning
// process is found.
func TestDumpLoopback(t *testing.T) {
	client, server := loopbackTransfer(t)
	local := netip.MustParseAddrPort(client.LocalAddr().String())
	remote := netip.MustParseAddrPort(client.RemoteAddr().String())
	c, err := Open(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	f, err := Parse("sport " + itoa(local.Port()) + " dport " + itoa(remote.Port()))
	if err != nil {
		t.Fatal(err)
	}
	socks, err := c.Dump(f, time.Second, &Procs{})
	if err != nil {
		t.Fatal(err)
	}
	if len(socks) != 1 {
		t.Fatalf("sport filter: %d sockets: %+v", len(socks), socks)
	}
	s := socks[0]
	if s.Local != local || s.Remote != remote || s.TCP.State != 1 || s.Cookie == 0 || s.Inode == 0 {
		t.Errorf("socket %+v", s)
	}
	if s.TCP.KernelLen < 100 || s.TCP.Congestion == "" || s.TCP.SndMSS == 0 || s.TCP.At != time.Second {
		t.Errorf("tcp_info not decoded: %+v", s.TCP)
	}
	if b, ok := s.TCP.BytesAcked.Get(); !ok || b < 100_000 {
		t.Errorf("bytes acked %v, want the 100 kB written", s.TCP.BytesAcked)
	}
	// The send buffer's size, from the memory counters, is what
	// SO_SNDBUF says of the same socket.
	if want, _, err := tcpinfo.Buffers(client.(*net.TCPConn)); err != nil {
		t.Fatal(err)
	} else if got, ok := s.TCP.SndBuf.Get(); !ok || got != want {
		t.Errorf("send buffer %v, want SO_SNDBUF's %v", s.TCP.SndBuf, want)
	}
	if s.PID != os.Getpid() || s.Process == "" {
		t.Errorf("owner pid %d %q, want this process %d", s.PID, s.Process, os.Getpid())
	}

	// The server's end: dport is the client's port; its 100 kB unread.
	f, _ = Parse("dport " + itoa(local.Port()) + " sport " + itoa(remote.Port()) + " src 127.0.0.0/8 state established")
	socks, err = c.Dump(f, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(socks) != 1 || socks[0].Local != remote || socks[0].TCP.RecvQ.V != 100_000 {
		t.Errorf("dport filter: %+v", socks)
	}
	_ = server

	// Conditions that match nothing.
	for _, q := range []string{"sport " + itoa(local.Port()) + " dst 10.0.0.0/8", "sport " + itoa(local.Port()) + " state time-wait",
		"sport " + itoa(local.Port()) + " dst ::1", "pid 1 sport " + itoa(local.Port())} {
		f, _ := Parse(q)
		socks, err := c.Dump(f, 0, &Procs{})
		if err != nil || len(socks) != 0 {
			t.Errorf("%q: %d sockets, %v", q, len(socks), err)
		}
	}
	// Every state includes established.
	f, _ = Parse("sport " + itoa(local.Port()) + " dport " + itoa(remote.Port()) + " state all")
	if socks, err := c.Dump(f, 0, nil); err != nil || len(socks) != 1 {
		t.Errorf("state all: %d sockets, %v", len(socks), err)
	}
	// pid of this process keeps it.
	f, _ = Parse("pid " + itoa(os.Getpid()) + " sport " + itoa(local.Port()) + " dport " + itoa(remote.Port()))
	if socks, _ := c.Dump(f, 0, &Procs{}); len(socks) != 1 {
		t.Errorf("pid filter: %d sockets", len(socks))
	}
}

func itoa[T int | uint16](v T) string { return strconv.Itoa(int(v)) }

// Get finds the socket a dump listed, directly, and not once it is closed.
func TestGet(t *testing.T) {
	client, _ := loopbackTransfer(t)
	local := netip.MustParseAddrPort(client.LocalAddr().String())
	c, err := Open(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	remote := netip.MustParseAddrPort(client.RemoteAddr().String())
	f, _ := Parse("sport " + itoa(local.Port()) + " dport " + itoa(remote.Port()))
	socks, err := c.Dump(f, 0, nil)
	if err != nil || len(socks) != 1 {
		t.Fatalf("dump: %d, %v", len(socks), err)
	}
	got, ok, err := c.Get(socks[0], 2*time.Second)
	if err != nil || !ok || got.Cookie != socks[0].Cookie || got.Local != local || got.TCP.At != 2*time.Second || got.TCP.KernelLen == 0 {
		t.Fatalf("Get = %+v, %v, %v", got, ok, err)
	}
	// Closed: gone from established; it may linger in FIN-WAIT, which Get
	// still finds (all states), then vanish.
	client.Close()
	waitFor(t, "Get to see the socket closed", func() bool {
		got, ok, err := c.Get(socks[0], 0)
		if err != nil {
			t.Fatal(err)
		}
		return !ok || got.TCP.State != 1 && got.Cookie == socks[0].Cookie
	})
	// A wrong cookie never matches.
	wrong := socks[0]
	wrong.Cookie++
	if _, ok, err := c.Get(wrong, 0); ok || err != nil {
		t.Errorf("a wrong cookie matched: %v, %v", ok, err)
	}
}
