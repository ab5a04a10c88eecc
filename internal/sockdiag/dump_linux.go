package sockdiag

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// inet_diag attribute types (linux/inet_diag.h).
const (
	attrInfo    = 2
	attrCong    = 4
	attrBBRInfo = 16
	// attrMemInfo is INET_DIAG_SKMEMINFO: the socket's memory counters,
	// u32 each, indexed as the kernel's SK_MEMINFO_* (the send buffer's
	// size at memSndbuf).
	attrMemInfo = 7
	memSndbuf   = 3
	// reqBytecode is INET_DIAG_REQ_BYTECODE, the request's filter.
	reqBytecode = 1
)

// Sizes of the fixed parts of a request (struct inet_diag_req_v2) and a
// reply (struct inet_diag_msg).
const (
	reqLen = 56
	msgLen = 72
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
	// cc is the last congestion-control name decoded. Sockets share a
	// handful of names, so this keeps a dump from allocating one string
	// per socket.
	cc string
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

// Extensions asked of the kernel with a dump or lookup (the request's
// idiag_ext: bit n asks for attribute n+1).
const (
	extInfo  = 1 << (attrInfo - 1)
	extVegas = 1 << (3 - 1) // INET_DIAG_VEGASINFO, which also brings BBR's model
	extCong  = 1 << (attrCong - 1)
	extMem   = 1 << (attrMemInfo - 1)
	extFull  = extInfo | extVegas | extCong | extMem
)

// Dump lists the TCP sockets, IPv4 and IPv6, that match f. Each Socket's
// TCP.At is set to at. PIDs and process names are filled in when procs is
// not nil (see Procs).
func (c *Conn) Dump(f Filter, at time.Duration, procs *Procs) ([]model.Socket, error) {
	out, err := dumpParts(c, f, extFull, func(l *link, b []byte, s *model.Socket) error {
		err := l.decode(b, s)
		s.TCP.At = at
		return err
	})
	if err != nil {
		return nil, err
	}
	if procs != nil {
		procs.Fill(out)
	}
	if len(f.PIDs) > 0 {
		out = slices.DeleteFunc(out, func(s model.Socket) bool { return !slices.Contains(f.PIDs, s.PID) })
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
	out, err := dumpParts(c, f, extInfo|extCong, func(l *link, b []byte, row *T) error {
		s := brief(row)
		err := l.decodeBrief(b, s)
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
	if len(f.PIDs) > 0 {
		out = slices.DeleteFunc(out, func(r T) bool { return !slices.Contains(f.PIDs, brief(&r).PID) })
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
	families := [2]uint8{unix.AF_INET, unix.AF_INET6}
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
	if len(f.Conds) == 0 && f.States == 0 {
		v4, v6 := sockstat()
		return [2]int{v4, v6}
	}
	return [2]int{}
}

// sockstat counts the IPv4 and IPv6 TCP sockets of this process's network
// namespace, from /proc/net/sockstat and sockstat6 (0 where unreadable):
// sockets in use, and for IPv4 also those in TIME-WAIT, of both families.
func sockstat() (v4, v6 int) {
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
	return read("/proc/net/sockstat", "TCP:", "inuse", "tw"), read("/proc/net/sockstat6", "TCP6:", "inuse")
}

// dump runs one dump request of one family and hands each reply to fn.
func (l *link) dump(family uint8, states uint32, ext uint8, bc []byte, fn func([]byte) error) error {
	req := make([]byte, reqLen, reqLen+4+len(bc))
	req[0] = family
	req[1] = unix.IPPROTO_TCP
	req[2] = ext
	binary.NativeEndian.PutUint32(req[4:], states)
	// The socket id stays zero: a dump matches any.
	if len(bc) > 0 {
		req = appendAttr(req, reqBytecode, bc)
	}
	return l.roundTrip(unix.NLM_F_REQUEST|unix.NLM_F_DUMP, req, fn)
}

// appendAttr appends one netlink attribute, padded to four bytes.
func appendAttr(b []byte, typ uint16, data []byte) []byte {
	var h [4]byte
	binary.NativeEndian.PutUint16(h[:], uint16(4+len(data)))
	binary.NativeEndian.PutUint16(h[2:], typ)
	b = append(append(b, h[:]...), data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// roundTrip sends one SOCK_DIAG_BY_FAMILY request and hands each reply's
// payload to fn, in place in the receive buffer (fn must not keep it),
// until the dump's end or a single reply.
func (l *link) roundTrip(flags uint16, payload []byte, fn func([]byte) error) error {
	c := l
	c.seq++
	msg := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(payload))
	binary.NativeEndian.PutUint32(msg[0:], uint32(unix.NLMSG_HDRLEN+len(payload)))
	binary.NativeEndian.PutUint16(msg[4:], sockDiagByFamily)
	binary.NativeEndian.PutUint16(msg[6:], flags)
	binary.NativeEndian.PutUint32(msg[8:], c.seq)
	msg = append(msg, payload...)
	if err := l.send(msg); err != nil {
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
		b := c.buf[:n]
		for len(b) >= unix.NLMSG_HDRLEN {
			l := int(binary.NativeEndian.Uint32(b[0:]))
			typ := binary.NativeEndian.Uint16(b[4:])
			mflags := binary.NativeEndian.Uint16(b[6:])
			seq := binary.NativeEndian.Uint32(b[8:])
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return fmt.Errorf("receive: malformed netlink message of %d bytes", l)
			}
			data := b[unix.NLMSG_HDRLEN:l]
			b = b[min(nlAlign(l), len(b)):]
			if seq != c.seq {
				continue // a late reply to an earlier request
			}
			switch typ {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if len(data) < 4 {
					return errors.New("receive: short netlink error")
				}
				if e := int32(binary.NativeEndian.Uint32(data)); e != 0 {
					return unix.Errno(-e)
				}
				return nil
			}
			if err := fn(data); err != nil {
				return err
			}
			if mflags&unix.NLM_F_MULTI == 0 {
				return nil
			}
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

func nlAlign(n int) int { return (n + 3) &^ 3 }

// nlaTypeMask strips the nested and byte-order flags from an attribute's
// type (NLA_TYPE_MASK).
const nlaTypeMask = 0x3fff

// Get reads one socket again, by its addresses and cookie, without a dump:
// the kernel looks it up directly, so following one connection costs the
// same however many others the host has. ok is false once it is gone (or
// its addresses now belong to a newer socket).
func (c *Conn) Get(s model.Socket, at time.Duration) (model.Socket, bool, error) {
	family := uint8(unix.AF_INET)
	if s.IPv6 {
		family = unix.AF_INET6
	}
	req := make([]byte, reqLen)
	req[0], req[1] = family, unix.IPPROTO_TCP
	req[2] = extFull
	binary.NativeEndian.PutUint32(req[4:], 1<<12-1)
	binary.BigEndian.PutUint16(req[8:], s.Local.Port())
	binary.BigEndian.PutUint16(req[10:], s.Remote.Port())
	putAddr(req[12:28], s.Local.Addr(), family)
	putAddr(req[28:44], s.Remote.Addr(), family)
	binary.NativeEndian.PutUint32(req[48:], uint32(s.Cookie))
	binary.NativeEndian.PutUint32(req[52:], uint32(s.Cookie>>32))
	var out model.Socket
	found := false
	l := c.links[0]
	err := l.roundTrip(unix.NLM_F_REQUEST, req, func(data []byte) error {
		found = true
		return l.decode(data, &out)
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

// putAddr writes a in the socket id's address field: four bytes for
// IPv4, sixteen (IPv4-mapped if need be) for IPv6.
func putAddr(b []byte, a netip.Addr, family uint8) {
	if family == unix.AF_INET {
		v4 := a.As4()
		copy(b, v4[:])
		return
	}
	v6 := a.As16()
	copy(b, v6[:])
}

// sockDiagByFamily is SOCK_DIAG_BY_FAMILY.
const sockDiagByFamily = 20

// msg is one struct inet_diag_msg, read where it lies, and the
// attributes tcpscope uses.
type msg struct {
	family        uint8
	state         model.TCPState
	local, remote netip.AddrPort
	cookie        uint64
	rq, wq        uint32
	uid, inode    uint32
	// info, cong, bbr and mem are the attributes' payloads, in the
	// receive buffer: nil when the kernel sent none.
	info, cong, bbr, mem []byte
}

// parseMsg reads one reply's fixed part and finds its attributes.
func parseMsg(b []byte) (msg, error) {
	if len(b) < msgLen {
		return msg{}, fmt.Errorf("sock_diag: message of %d bytes, want at least %d", len(b), msgLen)
	}
	m := msg{family: b[0], state: model.TCPState(b[1])}
	// struct inet_diag_sockid at 4: be16 sport, be16 dport, be32 src[4],
	// be32 dst[4], u32 if, u32 cookie[2].
	sport := binary.BigEndian.Uint16(b[4:])
	dport := binary.BigEndian.Uint16(b[6:])
	m.local = netip.AddrPortFrom(addr(m.family, b[8:24]), sport)
	m.remote = netip.AddrPortFrom(addr(m.family, b[24:40]), dport)
	m.cookie = uint64(binary.NativeEndian.Uint32(b[44:])) | uint64(binary.NativeEndian.Uint32(b[48:]))<<32
	m.rq, m.wq = binary.NativeEndian.Uint32(b[56:]), binary.NativeEndian.Uint32(b[60:])
	m.uid = binary.NativeEndian.Uint32(b[64:])
	m.inode = binary.NativeEndian.Uint32(b[68:])
	for a := b[msgLen:]; len(a) >= 4; {
		n := int(binary.NativeEndian.Uint16(a))
		typ := binary.NativeEndian.Uint16(a[2:]) & nlaTypeMask
		if n < 4 || n > len(a) {
			return msg{}, fmt.Errorf("sock_diag: malformed attribute of %d bytes", n)
		}
		switch typ {
		case attrInfo:
			m.info = a[4:n]
		case attrCong:
			m.cong = a[4:n]
		case attrBBRInfo:
			m.bbr = a[4:n]
		case attrMemInfo:
			m.mem = a[4:n]
		}
		a = a[min(nlAlign(n), len(a)):]
	}
	return m, nil
}

// ccName is the congestion-control attribute as a string, the one made
// for the previous socket when it is the same name.
func (l *link) ccName(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if string(b) != l.cc {
		l.cc = string(b)
	}
	return l.cc
}

// decode reads one reply into s.
func (l *link) decode(b []byte, s *model.Socket) error {
	m, err := parseMsg(b)
	if err != nil {
		return err
	}
	s.Local, s.Remote = m.local, m.remote
	s.IPv6 = m.family == unix.AF_INET6
	s.Cookie, s.UID, s.Inode = m.cookie, m.uid, m.inode
	if len(m.info) > 0 {
		if s.TCP, err = tcpinfo.Decode(m.info); err != nil {
			return err
		}
	}
	s.TCP.State = m.state
	if m.cong != nil {
		s.TCP.Congestion = l.ccName(m.cong)
	}
	if len(m.bbr) > 0 && s.TCP.Congestion == "bbr" {
		if s.TCP.BBR, err = tcpinfo.DecodeBBR(m.bbr); err != nil {
			return err
		}
	}
	// For a listener the queues mean the accept backlog; for the rest
	// they are ss's Recv-Q and Send-Q.
	s.TCP.RecvQ, s.TCP.SendQ = model.Some(model.Bytes(m.rq)), model.Some(model.Bytes(m.wq))
	if len(m.mem) >= 4*(memSndbuf+1) {
		s.TCP.SndBuf = model.Some(model.Bytes(binary.NativeEndian.Uint32(m.mem[4*memSndbuf:])))
	}
	return nil
}

// decodeBrief reads one reply into s.
func (l *link) decodeBrief(b []byte, s *model.SocketBrief) error {
	m, err := parseMsg(b)
	if err != nil {
		return err
	}
	s.Local, s.Remote = m.local, m.remote
	s.Cookie, s.Inode = m.cookie, m.inode
	if len(m.info) > 0 {
		if s.TCP, err = tcpinfo.DecodeBrief(m.info); err != nil {
			return err
		}
	}
	s.TCP.State = m.state
	if m.cong != nil {
		s.TCP.Congestion = l.ccName(m.cong)
	}
	return nil
}

func addr(family uint8, b []byte) netip.Addr {
	if family == unix.AF_INET {
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrFrom16([16]byte(b[:16])).Unmap()
}

// Procs maps socket inodes to the processes holding them, from
// /proc/PID/fd. Other users' processes are visible only to root (or with
// CAP_SYS_PTRACE); their sockets keep PID 0.
type Procs struct {
	// Root is where /proc is; "" means "/".
	Root  string
	byIno map[uint32]proc
	at    time.Time
}

type proc struct {
	pid  int
	name string
}

// procsTTL: the map is rebuilt at most this often; a new connection's
// owner appears within it.
const procsTTL = 2 * time.Second

// Fill sets PID and Process of the sockets whose inode it knows,
// rescanning /proc when the map is older than procsTTL or an inode is new.
func (p *Procs) Fill(socks []model.Socket) {
	fill(p, socks, func(s *model.Socket) (uint32, *int, *string) { return s.Inode, &s.PID, &s.Process })
}

// fill is Fill for any socket type; owner gives a socket's inode and
// where its owner goes.
func fill[S any](p *Procs, socks []S, owner func(*S) (ino uint32, pid *int, name *string)) {
	missing := false
	for i := range socks {
		ino, _, _ := owner(&socks[i])
		if _, ok := p.byIno[ino]; !ok && ino != 0 {
			missing = true
			break
		}
	}
	if p.byIno == nil || (missing && time.Since(p.at) > 200*time.Millisecond) || time.Since(p.at) > procsTTL {
		p.scan()
	}
	for i := range socks {
		ino, pid, name := owner(&socks[i])
		if pr, ok := p.byIno[ino]; ok {
			*pid, *name = pr.pid, pr.name
		}
	}
}

func (p *Procs) scan() {
	root := p.Root
	if root == "" {
		root = "/"
	}
	p.byIno, p.at = map[uint32]proc{}, time.Now()
	dirs, err := os.ReadDir(filepath.Join(root, "proc"))
	if err != nil {
		return
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join(root, "proc", d.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or not ours to see
		}
		name := ""
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]"), 10, 32)
			if err != nil {
				continue
			}
			if name == "" {
				b, _ := os.ReadFile(filepath.Join(root, "proc", d.Name(), "comm"))
				name = strings.TrimSpace(string(b))
			}
			if _, seen := p.byIno[uint32(ino)]; !seen {
				p.byIno[uint32(ino)] = proc{pid: pid, name: name}
			}
		}
	}
}
