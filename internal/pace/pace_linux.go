package pace

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ticker ticks at a fixed period. It is not safe for concurrent use.
type Ticker struct {
	f    *os.File // the timerfd, non-blocking, in the network poller
	rc   syscall.RawConn
	ctx  context.Context
	stop func() bool
	n    [8]byte
	err  error
}

// NewTicker starts a ticker whose first tick comes one period from now.
// Its Wait returns early, with ctx's error, once ctx is done.
func NewTicker(ctx context.Context, period time.Duration) (*Ticker, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	ts := unix.NsecToTimespec(period.Nanoseconds())
	if err := unix.TimerfdSettime(fd, 0, &unix.ItimerSpec{Interval: ts, Value: ts}, nil); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	t := &Ticker{f: f, rc: rc, ctx: ctx}
	// A deadline in the past wakes a waiting Wait, through the poller.
	t.stop = context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	return t, nil
}

// Wait blocks until the next tick. Ticks missed while the caller was busy
// count as one, as with a time.Ticker.
func (t *Ticker) Wait() error {
	t.err = nil
	err := t.rc.Read(t.read)
	if cerr := t.ctx.Err(); cerr != nil {
		return cerr
	}
	if err != nil {
		return fmt.Errorf("timerfd: %w", err)
	}
	if t.err != nil {
		return fmt.Errorf("timerfd: %w", t.err)
	}
	return nil
}

// read reads the expirations count, or reports that there is none yet.
func (t *Ticker) read(fd uintptr) bool {
	_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&t.n[0])), uintptr(len(t.n)))
	switch e {
	case 0:
		return true
	case unix.EAGAIN:
		return false
	}
	t.err = e
	return true
}

// Stop stops the ticker and releases its file.
func (t *Ticker) Stop() {
	t.stop()
	t.f.Close()
}

// Output returns a writer for w that writes without the scheduler's
// notice where it can. A regular file or a device that is not a terminal
// (/dev/null) takes a write without waiting for a reader: it gets raw
// system calls. A pipe gets a descriptor of its own, opened again through
// /proc and non-blocking, so a full pipe is waited out in the network
// poller; the descriptor w has, which other processes may share, is left
// as it is. Anything else (a socket, a terminal) is written as usual.
func Output(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok {
		return w
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return w
	}
	// Through the raw descriptor: f.Fd would make a non-blocking file
	// blocking.
	var out io.Writer = w
	rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if err := unix.Fstat(int(fd), &st); err != nil {
			return
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG, unix.S_IFCHR:
			if neverWaits(int(fd), st.Mode&unix.S_IFMT) {
				out = &rawFile{f: f, fd: int(fd)}
			}
		case unix.S_IFIFO:
			if p := reopenPipe(f, int(fd)); p != nil {
				out = p
			}
		}
	})
	return out
}

// neverWaits reports a regular file, or a device that is not a terminal,
// open for blocking writes (a non-blocking one may answer EAGAIN, which
// the usual path knows to wait out).
func neverWaits(fd int, kind uint32) bool {
	if kind == unix.S_IFCHR {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			return false
		}
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_NONBLOCK == 0
}

// reopenPipe opens the pipe orig's fd writes to again, non-blocking, in
// the network poller; nil if it cannot.
func reopenPipe(orig *os.File, fd int) io.Writer {
	name := "/proc/self/fd/" + strconv.Itoa(fd)
	nfd, err := unix.Open(name, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(nfd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	return &pollPipe{orig: orig, f: f, rc: rc}
}

// pollPipe writes to a non-blocking pipe with raw system calls, waiting
// in the network poller while the pipe is full.
type pollPipe struct {
	orig *os.File // the pipe as given
	f    *os.File
	rc   syscall.RawConn
	b    []byte
	n    int
	werr error
}

func (p *pollPipe) Write(b []byte) (int, error) {
	p.b, p.n, p.werr = b, 0, nil
	err := p.rc.Write(p.write)
	n := p.n
	p.b = nil
	if err == nil {
		err = p.werr
	}
	if err == unix.EPIPE {
		// The reader is gone: the rest goes through the pipe as given, to
		// fail there as it would have (standard output dies of SIGPIPE,
		// as a shell pipeline expects).
		m, err := p.orig.Write(b[n:])
		return n + m, err
	}
	if err != nil {
		return n, &os.PathError{Op: "write", Path: p.f.Name(), Err: err}
	}
	return n, nil
}

// write writes what is left of p.b; false asks to wait for room.
func (p *pollPipe) write(fd uintptr) bool {
	for p.n < len(p.b) {
		m, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p.b[p.n])), uintptr(len(p.b)-p.n))
		switch e {
		case 0:
			p.n += int(m)
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			p.werr = e
			return true
		}
	}
	return true
}

// rawFile writes to a file that never makes a writer wait.
type rawFile struct {
	f  *os.File // kept, so the descriptor stays open
	fd int
}

func (r *rawFile) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(r.fd), uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
		switch {
		case e == unix.EINTR:
			continue
		case e != 0:
			return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: e}
		case m == 0:
			return n, &os.PathError{Op: "write", Path: r.f.Name(), Err: io.ErrShortWrite}
		}
		n += int(m)
	}
	return n, nil
}
