package emulator

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRawTUN checks the fallback device without offloads, in a network
// namespace of the test's own: a datagram the kernel routes into the
// device is read whole, and a datagram written to it reaches a socket.
func TestRawTUN(t *testing.T) {
	// Not labtest.Require: labtest imports lab, which imports this
	// package.
	if testing.Short() {
		t.Skip("namespace test: needs root and network namespaces; skipped with -short (run without -short, as root)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to create a network namespace and a TUN device; CI runs it as root")
	}
	// The thread gets a namespace of its own and dies with it: the locked
	// goroutine ends without unlocking, so the runtime retires the thread.
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		rawTUNRoundTrip(t)
	}()
	<-done
}

func rawTUNRoundTrip(t *testing.T) {
	const mtu = 1400
	dev, err := CreateRawTUN("tcpscope-raw", mtu)
	if err != nil {
		t.Error(err)
		return
	}
	defer dev.Close()
	if b := dev.BatchSize(); b != 1 {
		t.Errorf("batch size %d, want 1 without offloads", b)
	}
	// ip runs in this thread's namespace: a locked thread's namespace is
	// inherited by the processes it starts.
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", "10.9.0.1/24", "dev", "tcpscope-raw"},
		{"link", "set", "tcpscope-raw", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Errorf("ip %v: %v: %s", args, err, out)
			return
		}
	}
	ln, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 9, 0, 1)})
	if err != nil {
		t.Error(err)
		return
	}
	defer ln.Close()

	// Kernel → device: a datagram to 10.9.0.2 leaves through the TUN.
	payload := []byte("tcpscope raw tun")
	if _, err := ln.WriteTo(payload, &net.UDPAddr{IP: net.IPv4(10, 9, 0, 2), Port: 9}); err != nil {
		t.Error(err)
		return
	}
	buf := make([]byte, Headroom+mtu)
	sizes := make([]int, 1)
	// The device may first see the kernel's own packets (IPv6 router
	// solicitations); read until the datagram.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Error("the datagram never came out of the device")
			return
		}
		n, err := dev.Read([][]byte{buf}, sizes, Headroom)
		if err != nil || n != 1 {
			t.Errorf("read: %d packets, %v", n, err)
			return
		}
		pkt := buf[Headroom : Headroom+sizes[0]]
		if pkt[0]>>4 == 4 && pkt[9] == unix.IPPROTO_UDP && bytes.HasSuffix(pkt, payload) {
			if !bytes.Equal(pkt[16:20], []byte{10, 9, 0, 2}) {
				t.Errorf("datagram to %v, want 10.9.0.2", net.IP(pkt[16:20]))
			}
			break
		}
	}

	// Device → kernel: an IPv4 datagram from 10.9.0.2 to the socket.
	port := ln.LocalAddr().(*net.UDPAddr).Port
	reply := []byte("back through the device")
	pkt := make([]byte, 28+len(reply))
	pkt[0], pkt[8], pkt[9] = 0x45, 64, unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	copy(pkt[12:16], []byte{10, 9, 0, 2})
	copy(pkt[16:20], []byte{10, 9, 0, 1})
	binary.BigEndian.PutUint16(pkt[10:], checksum(pkt[:20], 0))
	binary.BigEndian.PutUint16(pkt[20:], 9)
	binary.BigEndian.PutUint16(pkt[22:], uint16(port))
	binary.BigEndian.PutUint16(pkt[24:], uint16(8+len(reply))) // UDP checksum 0: none, as IPv4 allows
	copy(pkt[28:], reply)
	out := make([]byte, Headroom+len(pkt))
	copy(out[Headroom:], pkt)
	if _, err := dev.Write([][]byte{out}, Headroom); err != nil {
		t.Errorf("write: %v", err)
		return
	}
	ln.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 100)
	n, from, err := ln.ReadFrom(got)
	if err != nil || !bytes.Equal(got[:n], reply) {
		t.Errorf("socket got %q from %v, %v; want %q", got[:n], from, err, reply)
	}
}
