package perf

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// blockingConn is a TCP stream's socket taken off Go's poller (newEnd
// detaches every TCP stream but a -Z sender, whose sendfile goes through
// the net package): its reads and writes block in the kernel, as
// iperf3's and nuttcp's do.
//
// Why (issue 15; docs/BENCHMARKS.md "Blocking reads"): Go's poller parks
// a reader whose receive queue is empty and wakes it through epoll, and
// the socket stays in the runtime's epoll set, so each arrival wakes a
// thread waiting in epoll_pwait even when no goroutine waits for it.
// Measured on loopback at 128 KiB reads, a plain Go read loop cost
// 0.13-0.145 CPU-seconds per GB received with a timer running; the same
// loop on a blocking descriptor out of the epoll set 0.093-0.107, and
// one still in the epoll set 0.17-0.19 (a writer's socket wakes it the
// same way when acknowledgements free its buffer). So the socket is duplicated, the
// duplicate made blocking, and the original closed, which takes it out
// of the runtime's epoll set (the runtime deletes it before close).
//
// Deadlines are kept here: a read blocks at most for the time left to
// its deadline, and for at most blockSlice, after which it looks again,
// so a deadline another goroutine moves (stop, drainReceivers, abort)
// holds within blockSlice. The socket is an os.File: a Close while a
// read blocks releases the descriptor only when the read returns, so
// its number is never reused under it. The goroutines stay unlocked
// from their threads (yieldEvery).
type blockingConn struct {
	f             *os.File
	rc            syscall.RawConn // f's
	local, remote net.Addr
	rdl, wdl      atomic.Int64 // deadlines, Unix nanoseconds; 0: none
	closed        atomic.Bool
	release       func() // gives back the P added for it (Procs.hold)
	// rtimeo and wtimeo are the SO_RCVTIMEO and SO_SNDTIMEO set now,
	// ryield and wyield when the reader and the writer last yielded
	// (yieldEvery); only the reading and the writing goroutine touch
	// their own.
	rtimeo, wtimeo time.Duration
	ryield, wyield time.Time
}

// yieldEvery is how often a goroutine that reads or writes a detached
// socket passes through Go's scheduler. The runtime's monitor (sysmon)
// preempts a goroutine that has not been rescheduled for 10 ms, even one
// that is only ever in system calls, takes its P, and goes back to
// looking every 20 µs: measured, 4,000-9,000 wake-ups a second of the
// monitor, with the P handed back and forth every 10 ms. A yield every
// 2 ms keeps the monitor asleep (260 wake-ups a second) and costs one
// pass through the scheduler. The goroutine is not locked to its thread:
// a locked goroutine's yield hands its thread off and back, which
// measured at half the rate.
const yieldEvery = 5 * time.Millisecond

// yield passes through the scheduler if the last pass (*last) was
// yieldEvery ago.
func yield(last *time.Time) {
	if now := time.Now(); now.Sub(*last) >= yieldEvery {
		*last = now
		runtime.Gosched()
	}
}

// blockSlice bounds how long a read or write blocks before it looks at
// its deadline again: how late a deadline moved by another goroutine
// can be noticed, and how often an idle reader wakes.
const blockSlice = 10 * time.Millisecond

// detachTCP takes c off Go's poller (blockingConn). On error c is as it
// was, still open; on success c is closed and the returned conn is the
// socket.
func detachTCP(c *net.TCPConn) (*blockingConn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("detach from the poller: %w", err)
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) {
		nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, fmt.Errorf("detach from the poller: %w", err)
	}
	if derr != nil {
		return nil, fmt.Errorf("detach from the poller: dup: %w", derr)
	}
	// Blocking for both descriptors (the file's status is shared): the
	// original is closed next and no one reads it in between.
	if err := unix.SetNonblock(nfd, false); err != nil {
		unix.Close(nfd)
		return nil, fmt.Errorf("detach from the poller: %w", err)
	}
	f := os.NewFile(uintptr(nfd), "tcp") // blocking: not on the poller
	frc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("detach from the poller: %w", err)
	}
	b := &blockingConn{f: f, rc: frc, local: c.LocalAddr(), remote: c.RemoteAddr()}
	_ = c.Close() // out of the runtime's epoll set; the socket stays open
	return b, nil
}

// detach is c taken off Go's poller, with a P added for it by procs
// while it is open, or c itself when it cannot be (no procs, a
// GOMAXPROCS the user set, or an error): it then goes through the
// poller, as Go's sockets do.
func detach(c tcpConn, procs *Procs) tcpConn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	release, ok := procs.hold()
	if !ok {
		return c
	}
	b, err := detachTCP(tc)
	if err != nil {
		release()
		return c
	}
	b.release = release
	return b
}

func (b *blockingConn) opError(op string, err error) error {
	if b.closed.Load() {
		// What a closed *net.TCPConn says (the file's own error is
		// internal/poll's "use of closed file").
		err = net.ErrClosed
	}
	return &net.OpError{Op: op, Net: "tcp", Source: b.local, Addr: b.remote, Err: err}
}

// timeout is how long the next blocking call may wait: up to dl (Unix
// ns, 0: none), at most blockSlice; false when dl has passed.
func timeout(dl int64) (time.Duration, bool) {
	if dl == 0 {
		return blockSlice, true
	}
	left := time.Until(time.Unix(0, dl))
	if left <= 0 {
		return 0, false
	}
	return min(left, blockSlice), true
}

// setTimeo sets the socket option opt (SO_RCVTIMEO or SO_SNDTIMEO) to d
// unless it is set to d already (*cur). The kernel rounds it up to its
// clock tick; a zero would mean forever, so it is at least 1 µs.
func (b *blockingConn) setTimeo(opt int, cur *time.Duration, d time.Duration) error {
	if d == *cur {
		return nil
	}
	tv := unix.NsecToTimeval(max(d, time.Microsecond).Nanoseconds())
	var serr error
	if err := b.rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, opt, &tv)
	}); err != nil {
		return err
	}
	if serr != nil {
		return os.NewSyscallError("setsockopt", serr)
	}
	*cur = d
	return nil
}

// recv reads into p with flags (0, or MSG_TRUNC for --skip-rx-copy),
// blocking until data, end of file, an error or the read deadline.
func (b *blockingConn) recv(p []byte, flags int) (int, error) {
	yield(&b.ryield)
	for {
		wait, ok := timeout(b.rdl.Load())
		if !ok {
			return 0, b.opError("read", os.ErrDeadlineExceeded)
		}
		if err := b.setTimeo(unix.SO_RCVTIMEO, &b.rtimeo, wait); err != nil {
			return 0, b.opError("read", err)
		}
		var n int
		var rerr error
		if err := b.rc.Read(func(fd uintptr) bool {
			if flags == 0 {
				n, rerr = unix.Read(int(fd), p) // read(2), as Go's own reads
			} else {
				n, _, rerr = unix.Recvfrom(int(fd), p, flags)
			}
			return true // blocking: never wait on a poller
		}); err != nil {
			return 0, b.opError("read", err)
		}
		switch {
		case errors.Is(rerr, unix.EINTR), errors.Is(rerr, unix.EAGAIN):
			continue // EAGAIN: the slice ended; look at the deadline
		case rerr != nil:
			return 0, b.opError("read", os.NewSyscallError("read", rerr))
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (b *blockingConn) Read(p []byte) (int, error) { return b.recv(p, 0) }

// Write writes all of p, blocking, until the write deadline.
func (b *blockingConn) Write(p []byte) (int, error) {
	yield(&b.wyield)
	done := 0
	for done < len(p) {
		wait, ok := timeout(b.wdl.Load())
		if !ok {
			return done, b.opError("write", os.ErrDeadlineExceeded)
		}
		if err := b.setTimeo(unix.SO_SNDTIMEO, &b.wtimeo, wait); err != nil {
			return done, b.opError("write", err)
		}
		var n int
		var werr error
		if err := b.rc.Write(func(fd uintptr) bool {
			n, werr = unix.Write(int(fd), p[done:])
			return true
		}); err != nil {
			return done, b.opError("write", err)
		}
		done += max(n, 0)
		switch {
		case werr == nil, errors.Is(werr, unix.EINTR), errors.Is(werr, unix.EAGAIN):
		default:
			return done, b.opError("write", os.NewSyscallError("write", werr))
		}
	}
	return done, nil
}

// SetNoDelay sets TCP_NODELAY, as (*net.TCPConn).SetNoDelay.
func (b *blockingConn) SetNoDelay(on bool) error {
	v := 0
	if on {
		v = 1
	}
	var serr error
	if err := b.rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, v)
	}); err != nil {
		return b.opError("set", err)
	}
	if serr != nil {
		return b.opError("set", os.NewSyscallError("setsockopt", serr))
	}
	return nil
}

// CloseWrite half-closes the connection, as (*net.TCPConn).CloseWrite.
func (b *blockingConn) CloseWrite() error {
	var serr error
	if err := b.rc.Control(func(fd uintptr) { serr = unix.Shutdown(int(fd), unix.SHUT_WR) }); err != nil {
		return b.opError("close", err)
	}
	if serr != nil {
		return b.opError("close", os.NewSyscallError("shutdown", serr))
	}
	return nil
}

func (b *blockingConn) Close() error {
	b.closed.Store(true)
	if b.release != nil {
		b.release() // once, however many times Close is called
	}
	if err := b.f.Close(); err != nil {
		return b.opError("close", err)
	}
	return nil
}

func (b *blockingConn) LocalAddr() net.Addr                   { return b.local }
func (b *blockingConn) RemoteAddr() net.Addr                  { return b.remote }
func (b *blockingConn) SyscallConn() (syscall.RawConn, error) { return b.rc, nil }

func (b *blockingConn) SetDeadline(t time.Time) error {
	b.rdl.Store(unixNano(t))
	b.wdl.Store(unixNano(t))
	return nil
}

func (b *blockingConn) SetReadDeadline(t time.Time) error {
	b.rdl.Store(unixNano(t))
	return nil
}

func (b *blockingConn) SetWriteDeadline(t time.Time) error {
	b.wdl.Store(unixNano(t))
	return nil
}

// unixNano is t as a deadline: 0 for none (the zero time), else at
// least 1 (a time before 1970 has passed).
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixNano(), 1)
}
