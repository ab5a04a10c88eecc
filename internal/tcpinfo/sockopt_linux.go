package tcpinfo

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/model"
)

// availableCCPath lists the congestion-control algorithms the kernel has
// registered (built in or loaded as modules).
const availableCCPath = "/proc/sys/net/ipv4/tcp_available_congestion_control"

// rawRead is everything one Read fetches from the kernel. It is filled
// inside a single RawConn.Control call, so the socket is locked once and the
// buffers cost one allocation per Read (the closure passed to Control
// escapes, and so does everything it captures).
type rawRead struct {
	info      [512]byte // struct tcp_info is 280 bytes on Linux 6.18; room to grow
	infoLen   int
	cc        [16]byte // TCP_CA_NAME_MAX
	ccLen     int
	ccInfo    [32]byte // union tcp_cc_info: 20 bytes for BBR
	ccInfoLen int
	inq, outq int // SIOCINQ and SIOCOUTQ (TIOCINQ and TIOCOUTQ)
	queuesOK  bool
	sndbuf    int // SO_SNDBUF
	sndbufOK  bool
	err       error
}

// Read takes one sample of a TCP socket's kernel state: struct tcp_info,
// the congestion-control name and, for BBR, its model (TCP_CC_INFO). c is
// any syscall.Conn over a TCP socket, such as *net.TCPConn; unwrap a
// *tls.Conn with its NetConn method first. The Sample's At is left zero for
// the caller to stamp.
//
// Read is cheap enough to call every few milliseconds per stream: three or
// four getsockopt calls and two ioctls under one lock, and besides the result only the
// small allocations RawConn needs (about 0.7 KiB and 4 allocations with BBR,
// 3.5 µs, on the 6.18 test VM; see BenchmarkRead).
func Read(c syscall.Conn) (model.Sample, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return model.Sample{}, fmt.Errorf("read tcp_info: %w", err)
	}
	r := new(rawRead)
	if err := rc.Control(func(fd uintptr) { r.read(fd) }); err != nil {
		return model.Sample{}, fmt.Errorf("read tcp_info: %w", err)
	}
	if r.err != nil {
		return model.Sample{}, r.err
	}
	s, err := Decode(r.info[:r.infoLen])
	if err != nil {
		return model.Sample{}, err
	}
	s.Congestion = ccName(r.cc[:r.ccLen])
	if r.queuesOK {
		s.RecvQ, s.SendQ = model.Some(model.Bytes(r.inq)), model.Some(model.Bytes(r.outq))
	}
	if r.sndbufOK {
		s.SndBuf = model.Some(model.Bytes(r.sndbuf))
	}
	// Zero bytes of TCP_CC_INFO means the algorithm changed between the two
	// calls to one without get_info: no BBR model, and no error either.
	if r.ccInfoLen > 0 {
		if s.BBR, err = DecodeBBR(r.ccInfo[:r.ccInfoLen]); err != nil {
			return model.Sample{}, err
		}
	}
	return s, nil
}

func (r *rawRead) read(fd uintptr) {
	var err error
	if r.infoLen, err = getsockopt(fd, unix.IPPROTO_TCP, unix.TCP_INFO, r.info[:]); err != nil {
		r.err = fmt.Errorf("getsockopt TCP_INFO: %w", err)
		return
	}
	if r.ccLen, err = getsockopt(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, r.cc[:]); err != nil {
		r.err = fmt.Errorf("getsockopt TCP_CONGESTION: %w", err)
		return
	}
	// The socket's queues, as ss shows them: unread bytes (SIOCINQ) and
	// bytes not yet acknowledged (SIOCOUTQ). Optional: a failure leaves
	// them absent.
	inq, err1 := unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	outq, err2 := unix.IoctlGetInt(int(fd), unix.TIOCOUTQ)
	if err1 == nil && err2 == nil {
		r.inq, r.outq, r.queuesOK = inq, outq, true
	}
	// The send buffer's size now, which autotuning grows: optional too.
	if sb, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF); err == nil {
		r.sndbuf, r.sndbufOK = sb, true
	}
	// The kernel copies the whole name field: cut at the first NUL.
	if i := bytes.IndexByte(r.cc[:r.ccLen], 0); i >= 0 {
		r.ccLen = i
	}
	if string(r.cc[:r.ccLen]) != "bbr" {
		return
	}
	if r.ccInfoLen, err = getsockopt(fd, unix.IPPROTO_TCP, unix.TCP_CC_INFO, r.ccInfo[:]); err != nil {
		r.err = fmt.Errorf("getsockopt TCP_CC_INFO: %w", err)
	}
}

// getsockopt is the raw system call, because the kernel's returned length
// is what says which fields it filled and unix.GetsockoptTCPInfo drops it.
func getsockopt(fd uintptr, level, opt int, buf []byte) (int, error) {
	n := uint32(len(buf))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(min(n, uint32(len(buf)))), nil
}

// ccName returns the algorithm name, sharing the string for the common ones
// so that sampling does not allocate a new name every read.
func ccName(b []byte) string {
	switch string(b) {
	case "bbr":
		return "bbr"
	case "cubic":
		return "cubic"
	case "reno":
		return "reno"
	case "dctcp":
		return "dctcp"
	}
	return string(b)
}

// SetBuffers requests send and receive buffer sizes (SO_SNDBUF,
// SO_RCVBUF); 0 leaves that buffer alone. See SocketOptions for how the
// kernel treats the request; Buffers reports what it granted. The receive
// buffer bounds the window scale chosen at connection setup, so set it
// before connecting (DialControl) or on the listener.
func SetBuffers(c syscall.Conn, snd, rcv model.Bytes) error {
	return control(c, "set socket buffers", func(fd int) error { return setBuffers(fd, snd, rcv) })
}

// Buffers reports the socket's send and receive buffer sizes as the kernel
// holds them: model.SockBufFor the request clamped by net.core.wmem_max/rmem_max.
func Buffers(c syscall.Conn) (snd, rcv model.Bytes, err error) {
	err = control(c, "get socket buffers", func(fd int) error {
		s, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err != nil {
			return fmt.Errorf("get SO_SNDBUF: %w", err)
		}
		r, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
		if err != nil {
			return fmt.Errorf("get SO_RCVBUF: %w", err)
		}
		snd, rcv = model.Bytes(s), model.Bytes(r)
		return nil
	})
	return snd, rcv, err
}

// SetCongestion selects the congestion-control algorithm (TCP_CONGESTION).
// For an algorithm the kernel does not have, the error wraps unix.ENOENT
// (so errors.Is(err, unix.ENOENT) and errors.Is(err, fs.ErrNotExist) hold)
// and names the available ones; an unprivileged caller choosing one outside
// net.ipv4.tcp_allowed_congestion_control gets unix.EPERM.
func SetCongestion(c syscall.Conn, name string) error {
	return control(c, "set TCP_CONGESTION", func(fd int) error { return setCongestion(fd, name) })
}

// Congestion reports the socket's congestion-control algorithm.
func Congestion(c syscall.Conn) (string, error) {
	var name string
	err := control(c, "get TCP_CONGESTION", func(fd int) error {
		var err error
		if name, err = unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION); err != nil {
			return fmt.Errorf("get TCP_CONGESTION: %w", err)
		}
		return nil
	})
	return name, err
}

// SetMSS limits the segment size (TCP_MAXSEG); 0 removes the limit. The
// kernel applies it when the connection is set up, both to what it sends
// and to the MSS it advertises, so set it before connecting (DialControl)
// or on the listener.
func SetMSS(c syscall.Conn, mss int) error {
	return control(c, "set TCP_MAXSEG", func(fd int) error { return setMSS(fd, mss) })
}

// MSS reports TCP_MAXSEG: the current send MSS on a connected socket, the
// requested limit (or the protocol default) before that.
func MSS(c syscall.Conn) (int, error) {
	var mss int
	err := control(c, "get TCP_MAXSEG", func(fd int) error {
		var err error
		if mss, err = unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG); err != nil {
			return fmt.Errorf("get TCP_MAXSEG: %w", err)
		}
		return nil
	})
	return mss, err
}

// PathMTU reports the path MTU the kernel knows for a connected socket's
// destination (IP_MTU, or IPV6_MTU on an IPv6 socket): the route's MTU,
// lowered by any ICMP "too big" heard since.
func PathMTU(c syscall.Conn) (int, error) {
	var mtu int
	err := control(c, "get IP_MTU", func(fd int) error {
		var err error
		mtu, err = unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU)
		if err != nil {
			if mtu, err = unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU); err != nil {
				return fmt.Errorf("get IP_MTU: %w", err)
			}
		}
		return nil
	})
	return mtu, err
}

// SetMaxPacingRate caps the rate the kernel paces the socket at
// (SO_MAX_PACING_RATE, whole bytes per second rounded up); a rate ≤ 0
// removes the cap.
func SetMaxPacingRate(c syscall.Conn, r model.Bitrate) error {
	return control(c, "set SO_MAX_PACING_RATE", func(fd int) error { return setMaxPacingRate(fd, r) })
}

// DialControl returns a function for net.Dialer.Control (or
// net.ListenConfig.Control) that applies o to the socket before it connects
// or listens, which is when buffer sizes and MSS shape the handshake.
// Sockets accepted from a listener inherit its options.
func DialControl(o SocketOptions) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, rc syscall.RawConn) error {
		if o.isZero() {
			return nil
		}
		var aerr error
		if err := rc.Control(func(fd uintptr) { aerr = apply(int(fd), o) }); err != nil {
			return fmt.Errorf("apply socket options to %s %s: %w", network, address, err)
		}
		return aerr
	}
}

// Apply sets o on an existing socket, such as an accepted connection. The
// window scale was fixed by the handshake, so a larger receive buffer set
// here cannot be advertised beyond it; prefer DialControl where possible.
func Apply(c syscall.Conn, o SocketOptions) error {
	if o.isZero() {
		return nil
	}
	return control(c, "apply socket options", func(fd int) error { return apply(fd, o) })
}

// AvailableCongestion lists the congestion-control algorithms the kernel
// has registered, or nil when that cannot be read. Root may also select
// algorithms that the kernel can load as modules.
func AvailableCongestion() []string {
	b, err := os.ReadFile(availableCCPath)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// Settings reads the TCP buffer settings of the calling thread's network
// namespace from /proc/sys (a namespace's own tcp_rmem and tcp_wmem; the
// net.core caps are the machine's, shown read-only in a namespace). A
// setting that cannot be read stays absent; nil when none could.
func Settings() *model.TCPSettings {
	return settingsFrom("/proc/sys")
}

// settingsFrom reads Settings under root (a /proc/sys or a fixture).
func settingsFrom(root string) *model.TCPSettings {
	read := func(key string) []string {
		b, err := os.ReadFile(filepath.Join(root, strings.ReplaceAll(key, ".", "/")))
		if err != nil {
			return nil
		}
		return strings.Fields(string(b))
	}
	num := func(f []string) (int64, bool) {
		if len(f) != 1 {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		return n, err == nil && n >= 0
	}
	bounds := func(key string) model.Opt[model.BufferBounds] {
		f := read(key)
		if len(f) != 3 {
			return model.Opt[model.BufferBounds]{}
		}
		var v [3]int64
		for i := range f {
			n, ok := num(f[i : i+1])
			if !ok {
				return model.Opt[model.BufferBounds]{}
			}
			v[i] = n
		}
		return model.Some(model.BufferBounds{Min: model.Bytes(v[0]), Default: model.Bytes(v[1]), Max: model.Bytes(v[2])})
	}
	size := func(key string) model.Opt[model.Bytes] {
		if n, ok := num(read(key)); ok {
			return model.Some(model.Bytes(n))
		}
		return model.Opt[model.Bytes]{}
	}
	flag := func(key string) model.Opt[bool] {
		if n, ok := num(read(key)); ok {
			return model.Some(n != 0)
		}
		return model.Opt[bool]{}
	}
	s := &model.TCPSettings{
		Rmem: bounds("net.ipv4.tcp_rmem"), Wmem: bounds("net.ipv4.tcp_wmem"),
		RmemMax: size("net.core.rmem_max"), WmemMax: size("net.core.wmem_max"),
		Autotuning: flag("net.ipv4.tcp_moderate_rcvbuf"), WindowScaling: flag("net.ipv4.tcp_window_scaling"),
	}
	if *s == (model.TCPSettings{}) {
		return nil
	}
	return s
}

// KernelRelease is the running kernel's release (uname -r), or "" when
// unknown; reports record it because tcp_info's contents depend on it.
func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// control runs fn on c's file descriptor. Failures to reach the descriptor
// (for example a closed connection) are wrapped with op; fn wraps its own.
func control(c syscall.Conn, op string, fn func(fd int) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return ferr
}

// apply sets every non-zero option. Congestion goes first: a mistyped
// algorithm is the likeliest failure and should not leave half the options
// applied.
func apply(fd int, o SocketOptions) error {
	if o.Congestion != "" {
		if err := setCongestion(fd, o.Congestion); err != nil {
			return err
		}
	}
	if o.MSS != 0 {
		if err := setMSS(fd, o.MSS); err != nil {
			return err
		}
	}
	if err := setBuffers(fd, o.SndBuf, o.RcvBuf); err != nil {
		return err
	}
	if o.MaxPacingRate != 0 {
		if err := setMaxPacingRate(fd, o.MaxPacingRate); err != nil {
			return err
		}
	}
	if o.TOS != 0 {
		if err := setTOS(fd, o.TOS); err != nil {
			return err
		}
	}
	return nil
}

// setTOS sets the type-of-service byte as iperf3 does: IPV6_TCLASS on an
// IPv6 socket, IP_TOS on an IPv4 one. An IPv6 socket gets IP_TOS too, for
// the IPv4 peers it may reach through mapped addresses (a dual-stack
// listener's connections); Linux takes it there since 5.x, and an older
// kernel's refusal leaves the traffic class alone.
func setTOS(fd, tos int) error {
	if isIPv6(fd) {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tos); err != nil {
			return fmt.Errorf("set IPV6_TCLASS %d: %w", tos, err)
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, tos)
		return nil
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, tos); err != nil {
		return fmt.Errorf("set IP_TOS %d: %w", tos, err)
	}
	return nil
}

// isIPv6 says whether fd is an IPv6 socket.
func isIPv6(fd int) bool {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return false
	}
	_, ok := sa.(*unix.SockaddrInet6)
	return ok
}

// TOS reads back a socket's type-of-service byte: IPV6_TCLASS on an IPv6
// socket to an IPv6 peer, IP_TOS otherwise (an IPv4 socket, or an IPv6
// one whose peer is an IPv4-mapped address, whose packets are IPv4). A
// TCP socket's ECN bits are the kernel's, not the application's.
func TOS(c syscall.Conn) (int, error) {
	var tos int
	err := control(c, "get IP_TOS", func(fd int) error {
		level, opt, name := unix.IPPROTO_IP, unix.IP_TOS, "IP_TOS"
		if isIPv6(fd) {
			if p, err := unix.Getpeername(fd); err != nil || !isMapped(p) {
				level, opt, name = unix.IPPROTO_IPV6, unix.IPV6_TCLASS, "IPV6_TCLASS"
			}
		}
		var err error
		if tos, err = unix.GetsockoptInt(fd, level, opt); err != nil {
			return fmt.Errorf("get %s: %w", name, err)
		}
		return nil
	})
	return tos, err
}

// isMapped says whether sa is an IPv4-mapped IPv6 address.
func isMapped(sa unix.Sockaddr) bool {
	s6, ok := sa.(*unix.SockaddrInet6)
	if !ok {
		return false
	}
	for i := 0; i < 10; i++ {
		if s6.Addr[i] != 0 {
			return false
		}
	}
	return s6.Addr[10] == 0xff && s6.Addr[11] == 0xff
}

func setBuffers(fd int, snd, rcv model.Bytes) error {
	if snd != 0 {
		if err := setBuffer(fd, unix.SO_SNDBUF, "SO_SNDBUF", snd); err != nil {
			return err
		}
	}
	if rcv != 0 {
		if err := setBuffer(fd, unix.SO_RCVBUF, "SO_RCVBUF", rcv); err != nil {
			return err
		}
	}
	return nil
}

func setBuffer(fd, opt int, name string, n model.Bytes) error {
	if n < 0 {
		return fmt.Errorf("set %s: negative size %d", name, n)
	}
	// The kernel takes an int and clamps it to the sysctl maximum anyway.
	v := int(min(n, math.MaxInt32))
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, v); err != nil {
		return fmt.Errorf("set %s %d: %w", name, v, err)
	}
	return nil
}

func setCongestion(fd int, name string) error {
	err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		if avail := AvailableCongestion(); len(avail) > 0 {
			return fmt.Errorf("set TCP_CONGESTION %q: %w (available: %s)", name, err, strings.Join(avail, " "))
		}
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("set TCP_CONGESTION %q: %w (without CAP_NET_ADMIN only net.ipv4.tcp_allowed_congestion_control may be chosen)", name, err)
	}
	return fmt.Errorf("set TCP_CONGESTION %q: %w", name, err)
}

func setMSS(fd, mss int) error {
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG, mss); err != nil {
		return fmt.Errorf("set TCP_MAXSEG %d: %w", mss, err)
	}
	return nil
}

func setMaxPacingRate(fd int, r model.Bitrate) error {
	v := pacingBytes(r)
	var err error
	if bits.UintSize == 64 {
		err = unix.SetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, v)
	} else {
		// A 32-bit kernel reads only an int, and a big-endian one would take
		// the high half of a u64. ~0U still means unlimited, so caps beyond
		// 2³²−1 bytes/s (34 Gbit/s) become no cap at all.
		err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, int(int32(uint32(min(v, math.MaxUint32)))))
	}
	if err != nil {
		return fmt.Errorf("set SO_MAX_PACING_RATE %d bytes/s: %w", v, err)
	}
	return nil
}

// pacingBytes converts a cap to the kernel's bytes per second, rounding up
// so the cap is never below the request; ≤ 0 (and NaN) is ~0, unlimited.
func pacingBytes(r model.Bitrate) uint64 {
	if !(r > 0) {
		return math.MaxUint64
	}
	v := math.Ceil(float64(r) / 8)
	if v >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(v)
}
