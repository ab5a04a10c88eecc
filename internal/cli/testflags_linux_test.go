package cli

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fullListener is a listener whose accept queue is full: the kernel
// drops further SYNs, so connecting to it times out (a blackholed
// server, on loopback). It holds one connection in the queue.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	// A backlog of 0 queues one connection; the next SYN is dropped.
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	// The queue is full once a probe's connect times out.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { c.Close() })
		if time.Now().After(deadline) {
			t.Fatal("the accept queue never filled")
		}
	}
	return addr
}

// A server whose SYNs go unanswered fails after --connect-timeout, exit
// 5 with a hint.
func TestConnectTimeoutNoSYNACK(t *testing.T) {
	addr := fullListener(t)
	began := time.Now()
	code, _, stderr := run("test", addr, "--connect-timeout", "400")
	took := time.Since(began)
	if code != ExitTimeout || !strings.Contains(stderr, "timed out connecting") || !strings.Contains(stderr, "try:") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	if took < 400*time.Millisecond || took > 5*time.Second {
		t.Fatalf("failed after %v", took)
	}
}
