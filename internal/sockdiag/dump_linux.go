package sockdiag

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/sockdiag/inetdiag"
)

// Conn is a sock_diag socket, in one network namespace. It is not safe
// for concurrent use.
//
// It speaks netlink with plain system calls (raw ones, see recv) into one
// reused buffer per socket, decoding each reply where it lies. A general
// netlink library
// (mdlayher/netlink, tried first) copies every message and waits in the
// Go network poller: listing 20,000 sockets took 0.25 s that way against
// ss's 0.14 s, and following one connection at 100 Hz cost 4.8% of a core.
type Conn struct {
	// links are the netlink sockets. The first answers lookups; a dump is
	// split among all of them (see split), because the kernel fills a
	// dump's replies in the thread that asks for them, and two threads
	// asking for half each fill them on two CPUs at once.
	links []*link
	// last is how many sockets of each family the last dump found (see
	// expect); dumped says there was one.
	last   [2]int
	dumped bool
}

// link is one netlink socket and its receive buffer.
type link struct {
	fd  int
	seq uint32
	buf []byte
	// req holds the request being sent, reused.
	req []byte
	// dec decodes the replies, keeping the last congestion-control name.
	dec inetdiag.Decoder
}

// recvBuf is the receive buffer. The kernel fills one reply batch of at
// most 32 KiB per read of a dump, so 64 KiB always holds a whole one.
const recvBuf = 64 << 10

// Open opens a sock_diag socket in this process's network namespace, or,
// with netns ≥ 0, in the namespace that file descriptor refers to (an
// open /proc/PID/ns/net or /run/netns/NAME; entering it needs root).
func Open(netns int) (*Conn, error) {
	// One netlink socket per part of a split dump: more parts than CPUs
	// to run them on would only walk the socket table more often.
	parts := min(runtime.GOMAXPROCS(0), 2)
	create := func() ([]int, error) {
		var fds []int
		for range parts {
			fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
			if err != nil {
				closeAll(fds)
				return nil, err
			}
			fds = append(fds, fd)
		}
		return fds, nil
	}
	var fds []int
	var err error
	if netns >= 0 {
		fds, err = inNetns(netns, create)
	} else {
		fds, err = create()
	}
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	c := &Conn{}
	for _, fd := range fds {
		if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("sock_diag: bind: %w", err)
		}
		// A kernel that never answers must not hang the watcher.
		tv := unix.Timeval{Sec: 5}
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		c.links = append(c.links, &link{fd: fd, buf: make([]byte, recvBuf)})
	}
	return c, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// inNetns creates sockets inside another network namespace: on a locked
// thread switched there and back. A socket keeps the namespace it was
// created in.
func inNetns(netns int, create func() ([]int, error)) ([]int, error) {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer orig.Close()
	if err := unix.Setns(netns, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("enter network namespace: %w", err)
	}
	fds, cerr := create()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is stuck in the other namespace: leave it locked so
		// the runtime retires it with this goroutine's end.
		closeAll(fds)
		return nil, fmt.Errorf("return from network namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return fds, cerr
}

// Close closes the sockets.
func (c *Conn) Close() error {
	var first error
	for _, l := range c.links {
		if err := unix.Close(l.fd); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Dump lists the TCP sockets, IPv4 and IPv6, that match f. Each Socket's
// TCP.At is set to at. PIDs and process names are filled in when procs is
// not nil (see Procs).
func (c *Conn) Dump(f Filter, at time.Duration, procs *Procs) ([]model.Socket, error) {
	out, err := dumpParts(c, f, inetdiag.ExtFull, func(l *link, b []byte, s *model.Socket) error {
		err := l.dec.Socket(b, s)
		s.TCP.At = at
		return err
	})
	if err != nil {
		return nil, err
	}
	if procs != nil {
		procs.Fill(out)
	}
	if len(f.user) > 0 {
		out = slices.DeleteFunc(out, func(s model.Socket) bool { return !f.keep(s.Local, s.Remote, s.IPv6, s.TCP.State, s.PID) })
	}
	return out, nil
}

// List is Dump for a connection list: each socket as a model.SocketBrief,
// with the kernel asked for tcp_info and the congestion control only.
func (c *Conn) List(f Filter, at time.Duration, procs *Procs) ([]model.SocketBrief, error) {
	return ListInto(c, f, at, procs, func(s *model.SocketBrief) *model.SocketBrief { return s })
}

// ListInto is List into rows of the caller's type, each holding the
// model.SocketBrief brief points to: a list's rows are filled where they
// will stay, not copied from the sockets into rows of their own.
func ListInto[T any](c *Conn, f Filter, at time.Duration, procs *Procs, brief func(*T) *model.SocketBrief) ([]T, error) {
	out, err := dumpParts(c, f, inetdiag.ExtInfo|inetdiag.ExtCong, func(l *link, b []byte, row *T) error {
		s := brief(row)
		err := l.dec.Brief(b, s)
		s.TCP.At = at
		return err
	})
	if err != nil {
		return nil, err
	}
	if procs != nil {
		fill(procs, out, func(r *T) (uint32, *int, *string) {
			s := brief(r)
			return s.Inode, &s.PID, &s.Process
		})
	}
	if len(f.user) > 0 {
		out = slices.DeleteFunc(out, func(r T) bool {
			s := brief(&r)
			return !f.keep(s.Local, s.Remote, s.IPv6, s.TCP.State, s.PID)
		})
	}
	return out, nil
}

// dumpParts dumps the sockets that match f, split in as many parts as c
// has links, each part on its own link and goroutine, and returns them in
// the order one dump gives: IPv4 before IPv6. decode fills one socket
// from its reply, in place.
//
// A dump's memory is most of what listing costs beyond the kernel's
// work: every page of it is faulted in, and on a virtual machine that
// is microseconds a page. So the slices start at the size the last dump
// had (or, the first time, what /proc/net/sockstat counts) and are not
// grown, and the first part's first family is decoded straight into the
// slice returned, which the others are then appended to.
func dumpParts[T any](c *Conn, f Filter, ext uint8, decode func(*link, []byte, *T) error) ([]T, error) {
	// Families by index: 0 IPv4, 1 IPv6.
	families := [2]uint8{inetdiag.FamilyIPv4, inetdiag.FamilyIPv6}
	first := 0
	if f.v6Only() {
		first = 1
	}
	links := len(c.links)
	// Each part walks the kernel's whole table of sockets: a family with
	// few sockets is dumped whole, by the first link.
	expect := c.expect(f)
	var parts [2]int
	size := make([][2]int, links)
	total := 0
	for i := first; i < 2; i++ {
		parts[i] = 1
		if expect[i] >= splitMin {
			parts[i] = links
		}
		for part := range parts[i] {
			n := expect[i] / parts[i]
			size[part][i] = max(n+n/8, 64)
			total += size[part][i]
		}
	}
	got := make([][2][]T, links)
	got[0][first] = make([]T, 0, total)
	errs := make([]error, links)
	run := func(part int) {
		l := c.links[part]
		for i := first; i < 2; i++ {
			if part >= parts[i] {
				continue
			}
			bc, err := f.partBytecode(part, parts[i])
			if err != nil {
				errs[part] = err
				return
			}
			out := got[part][i]
			if out == nil {
				out = make([]T, 0, size[part][i])
			}
			err = l.dump(families[i], f.statesOrDefault(), ext, bc, func(b []byte) error {
				out = append(out, *new(T))
				return decode(l, b, &out[len(out)-1])
			})
			if err != nil {
				errs[part] = fmt.Errorf("sock_diag dump: %w", err)
				return
			}
			got[part][i] = out
		}
	}
	var wg sync.WaitGroup
	for part := 1; part < max(parts[0], parts[1]); part++ {
		wg.Go(func() { run(part) })
	}
	run(0)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := got[0][first]
	for i := first; i < 2; i++ {
		c.last[i] = 0
		for part := range got {
			c.last[i] += len(got[part][i])
			if part > 0 || i > first {
				out = append(out, got[part][i]...)
			}
		}
	}
	c.dumped = true
	return out, nil
}

// splitMin is the fewest sockets of a family worth a split dump: below
// it, a second walk of the kernel's table costs more than it saves.
const splitMin = 2000

// expect is how many sockets of each family the dump should find: as
// many as the last one did, or for a first dump of every socket, the
// kernel's count of them. A filter's first dump expects none: the counts
// are the host's, not its.
func (c *Conn) expect(f Filter) [2]int {
	if c.dumped {
		return c.last
	}
	if f.expr == nil {
		v4, v6 := sockstat(f.statesOrDefault()&(1<<6) != 0)
		return [2]int{v4, v6}
	}
	return [2]int{}
}

// sockstat counts the IPv4 and IPv6 TCP sockets of this process's network
// namespace, from /proc/net/sockstat and sockstat6 (0 where unreadable):
// sockets in use, and with tw, for IPv4, also those in TIME-WAIT, of both
// families (a dump without -a leaves them out, and a host may have tens
// of thousands).
func sockstat(tw bool) (v4, v6 int) {
	read := func(path string, keys ...string) int {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		n := 0
		for line := range strings.Lines(string(b)) {
			words := strings.Fields(line)
			if len(words) == 0 || words[0] != keys[0] {
				continue
			}
			for i := 1; i+1 < len(words); i++ {
				if slices.Contains(keys[1:], words[i]) {
					v, _ := strconv.Atoi(words[i+1])
					n += v
				}
			}
		}
		return n
	}
	keys := []string{"TCP:", "inuse"}
	if tw {
		keys = append(keys, "tw")
	}
	return read("/proc/net/sockstat", keys...), read("/proc/net/sockstat6", "TCP6:", "inuse")
}

// dump runs one dump request of one family and hands each reply to fn.
func (l *link) dump(family uint8, states uint32, ext uint8, bc []byte, fn func([]byte) error) error {
	return l.roundTrip(inetdiag.FlagRequest|inetdiag.FlagDump,
		inetdiag.Request{Family: family, Ext: ext, States: states, Bytecode: bc}, fn)
}

// roundTrip sends one request and hands each reply's payload to fn, in
// place in the receive buffer (fn must not keep it), until the reply is
// complete. A kernel error is a unix.Errno.
func (l *link) roundTrip(flags uint16, req inetdiag.Request, fn func([]byte) error) error {
	l.seq++
	l.req = inetdiag.AppendRequest(l.req[:0], flags, l.seq, req)
	if err := l.send(l.req); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	for {
		n, err := l.recv()
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return fmt.Errorf("receive: %w", err)
		}
		done, err := inetdiag.Batch(l.buf[:n], l.seq, fn)
		if errno, ok := errors.AsType[inetdiag.Errno](err); ok {
			return unix.Errno(errno)
		}
		if err != nil || done {
			return err
		}
	}
}

// kernel is the netlink address of the kernel.
var kernel = unix.RawSockaddrNetlink{Family: unix.AF_NETLINK}

// send sends one request. The kernel answers it during the call: all of a
// lookup's reply, or a dump's first batch of replies. Neither waits on
// anything, so the call is a raw one, which the Go scheduler does not
// see (see recv).
func (l *link) send(msg []byte) error {
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(l.fd), uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)),
		0, uintptr(unsafe.Pointer(&kernel)), unsafe.Sizeof(kernel))
	if e != 0 {
		return e
	}
	return nil
}

// recv reads the next batch of replies into l.buf.
//
// The kernel makes a dump's next batch during the read that takes the
// previous one, so a batch is always waiting: recv takes it with a
// non-blocking raw system call, as send does. Through the scheduler, a
// read the kernel spends more than 20 µs in (filling a batch of a hundred
// sockets' replies) hands the thread's P to another thread and wakes the
// runtime's monitor thread to poll every 20 µs: listing 20,000 sockets took
// 260 reads, 530 wake-ups of the monitor and 200 futex calls. Only when
// nothing is there, which a working kernel never does, does recv wait
// with a blocking read (under the socket's receive timeout).
func (l *link) recv() (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(l.fd), uintptr(unsafe.Pointer(&l.buf[0])), uintptr(len(l.buf)),
		unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0:
		return int(n), nil
	case unix.EAGAIN:
		m, _, err := unix.Recvfrom(l.fd, l.buf, 0)
		return m, err
	}
	return 0, e
}

// Get reads one socket again, by its addresses and cookie, without a dump:
// the kernel looks it up directly, so following one connection costs the
// same however many others the host has. ok is false once it is gone (or
// its addresses now belong to a newer socket).
func (c *Conn) Get(s model.Socket, at time.Duration) (model.Socket, bool, error) {
	family := uint8(inetdiag.FamilyIPv4)
	if s.IPv6 {
		family = inetdiag.FamilyIPv6
	}
	req := inetdiag.Request{
		Family: family, Ext: inetdiag.ExtFull, States: inetdiag.AllStates,
		ID: inetdiag.SockID{Local: s.Local, Remote: s.Remote, Cookie: s.Cookie},
	}
	var out model.Socket
	found := false
	l := c.links[0]
	err := l.roundTrip(inetdiag.FlagRequest, req, func(data []byte) error {
		found = true
		return l.dec.Socket(data, &out)
	})
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return model.Socket{}, false, nil
		}
		return model.Socket{}, false, fmt.Errorf("sock_diag lookup: %w", err)
	}
	if !found {
		return model.Socket{}, false, nil
	}
	out.TCP.At, out.PID, out.Process = at, s.PID, s.Process
	return out, true, nil
}
