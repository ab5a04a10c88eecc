package perf

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tcpPair is a loopback connection: the accepted end detached from Go's
// poller, and the dialled end as Go made it.
func tcpPair(t *testing.T) (*blockingConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialled, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dialled.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	b, err := detachTCP(c.(*net.TCPConn))
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, dialled.(*net.TCPConn)
}

// inodeOf is the inode of the socket behind a raw connection.
func inodeOf(t *testing.T, c syscall.Conn) uint64 {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstat(int(fd), &st) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return st.Ino
}

// epollWatches says whether any epoll instance of this process watches
// the socket with inode ino (/proc/self/fdinfo lists each watched
// descriptor as "tfd: N events: E data: D pos: P ino: I sdev: S", the
// inode in hex).
func epollWatches(t *testing.T, ino uint64) bool {
	t.Helper()
	infos, err := filepath.Glob("/proc/self/fdinfo/*")
	if err != nil {
		t.Fatal(err)
	}
	want := "ino:" + strconv.FormatUint(ino, 16)
	for _, p := range infos {
		f, err := os.Open(p)
		if err != nil {
			continue // closed since the listing
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			l := sc.Text()
			if strings.HasPrefix(l, "tfd:") && strings.Contains(strings.ReplaceAll(l, " ", ""), want) {
				f.Close()
				return true
			}
		}
		f.Close()
	}
	return false
}

// A detached socket is out of the runtime's epoll set (what saves the
// wake-ups), blocking, and carries the bytes both ways, then end of file.
func TestDetachLeavesThePoller(t *testing.T) {
	b, peer := tcpPair(t)
	if !epollWatches(t, inodeOf(t, peer)) {
		t.Fatal("the check finds nothing: Go's own socket should be in its epoll set")
	}
	if epollWatches(t, inodeOf(t, b)) {
		t.Fatal("the detached socket is still in an epoll set")
	}
	msg := bytes.Repeat([]byte("tcpscope"), 1<<16)
	go func() {
		_, _ = peer.Write(msg)
		_ = peer.CloseWrite()
	}()
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(msg))
	}
	if _, err := b.Write([]byte("back")); err != nil {
		t.Fatal(err)
	}
	if err := b.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(peer)
	if err != nil || string(back) != "back" {
		t.Fatalf("the peer read %q, %v", back, err)
	}
}

// A deadline another goroutine moves into the past ends a read blocked
// with nothing arriving within blockSlice, as Go's own deadlines do
// (stop, drainReceivers and abort rely on it); so does its own deadline.
func TestDetachedDeadlines(t *testing.T) {
	b, peer := tcpPair(t)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := b.Read(make([]byte, 1024))
		done <- err
	}()
	time.Sleep(30 * time.Millisecond) // the read is blocked by now
	_ = b.SetReadDeadline(time.Unix(1, 0))
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a read went on 5 s past a deadline set in the past")
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if d := time.Since(start); d > 30*time.Millisecond+blockSlice+200*time.Millisecond {
		t.Errorf("the read ended %v after it began, the deadline came at 30 ms", d)
	}

	// Its own deadline, 50 ms ahead: no sooner, and not much later.
	_ = b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start = time.Now()
	_, err = b.Read(make([]byte, 1024))
	if d := time.Since(start); !errors.Is(err, os.ErrDeadlineExceeded) || d < 50*time.Millisecond {
		t.Fatalf("read ended after %v with %v, want the deadline at 50 ms", d, err)
	}
	// Cleared, the read waits for data again.
	_ = b.SetReadDeadline(time.Time{})
	go func() { _, _ = peer.Write([]byte("x")) }()
	if n, err := b.Read(make([]byte, 8)); n != 1 || err != nil {
		t.Fatalf("after clearing the deadline: %d, %v", n, err)
	}

	// A write into a peer that reads nothing stops at its deadline,
	// having written part.
	_ = b.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	n, err := b.Write(make([]byte, 64<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) || n <= 0 || n >= 64<<20 {
		t.Fatalf("write: %d bytes, %v; want part and the deadline", n, err)
	}
}

// Close while a read blocks ends the read with net.ErrClosed, and the
// descriptor is released only then (os.File's reference count).
func TestDetachedCloseDuringRead(t *testing.T) {
	b, _ := tcpPair(t)
	done := make(chan error, 1)
	go func() {
		_, err := b.Read(make([]byte, 16))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("err = %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read went on 5 s after Close")
	}
}

// drainQueued and truncReader work on a detached socket: the first takes
// what is queued without waiting for more, the second counts bytes
// without copying them.
func TestDetachedDrainAndTrunc(t *testing.T) {
	b, peer := tcpPair(t)
	if _, err := peer.Write(make([]byte, 3000)); err != nil {
		t.Fatal(err)
	}
	// Wait until all of it is queued (the kernel's count, FIONREAD).
	for deadline := time.Now().Add(5 * time.Second); ; {
		var q int
		rc, _ := b.SyscallConn()
		_ = rc.Control(func(fd uintptr) { q, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
		if q == 3000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queued %d of 3000", q)
		}
		time.Sleep(time.Millisecond)
	}
	got := 0
	start := time.Now()
	if err := drainQueued(b, make([]byte, 1024), func(p []byte) { got += len(p) }); err != nil {
		t.Fatal(err)
	}
	if got != 3000 || time.Since(start) > time.Second/2 {
		t.Fatalf("drained %d of 3000 in %v", got, time.Since(start))
	}

	read, err := truncReader(b)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = peer.Write(bytes.Repeat([]byte{0x5a}, 1<<20))
		_ = peer.CloseWrite()
	}()
	buf := make([]byte, 64<<10)
	total := 0
	for {
		n, err := read(buf)
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if total != 1<<20 || bytes.IndexByte(buf, 0x5a) >= 0 {
		t.Fatalf("counted %d of %d bytes; copied any: %v", total, 1<<20, bytes.IndexByte(buf, 0x5a) >= 0)
	}
}
