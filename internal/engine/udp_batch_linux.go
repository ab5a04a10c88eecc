package engine

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UDP streams move their datagrams in batches: a datagram a system call
// cost a park and a wake in the network poller each time the socket was
// empty or full, and a system call each. A sender hands the kernel a
// burst of datagrams at once, as one GSO super-buffer (UDP_SEGMENT: the
// kernel, or the device, cuts it into datagrams of the segment size,
// each with its own header, so every datagram on the wire is the one
// it would have been) or with sendmmsg where GSO is missing or refused. A
// receiver takes what is queued with recvmmsg, and with UDP_GRO set the
// kernel may hand it several datagrams of one size in one buffer, which
// it splits by the size the kernel reports. Both run through the network
// poller, so the socket's deadlines hold as before.

const (
	// udpMaxSegments is the most datagrams one GSO send may carry
	// (UDP_MAX_SEGMENTS; newer kernels take 128, all since 4.18 take 64).
	udpMaxSegments = 64
	// udpMaxBurstBytes is the most payload one GSO send may carry: one
	// IPv4 datagram's worth.
	udpMaxBurstBytes = MaxUDPLength
	// udpRecvSlots is how many buffers one recvmmsg fills.
	udpRecvSlots = 8
	// udpRecvBuf is one slot's buffer: the largest datagram, or the most a
	// GRO buffer holds.
	udpRecvBuf = 65536
)

// udpIO batches one stream's datagrams.
type udpIO struct {
	rc  syscall.RawConn
	gso bool // UDP_SEGMENT: send bursts as one super-buffer
	gro bool // UDP_GRO is set: a received buffer may hold several datagrams

	// Send state, reused from call to call.
	sendHdrs []mmsghdr
	sendIovs []unix.Iovec
	segOOB   []byte

	// Receive state.
	bufs    []byte
	oobs    []byte
	recvHdr []mmsghdr
	recvIov []unix.Iovec
}

// mmsghdr is struct mmsghdr: a message and the length the call moved.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

// newUDPIO prepares batched I/O on c. offload asks for GSO on send and
// GRO on receive, each used only where the kernel takes it.
func newUDPIO(c *net.UDPConn, offload bool) (*udpIO, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	// GSO is asked for per send (a control message), so the kernel's
	// answer to the first burst decides; an unknown option there says
	// at once that it has none.
	return &udpIO{rc: rc, gso: offload}, nil
}

// enableGRO sets UDP_GRO on the socket, where the kernel has it (5.0+),
// and reports whether it did.
func (u *udpIO) enableGRO() bool {
	var serr error
	if err := u.rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1)
	}); err == nil && serr == nil {
		u.gro = true
	}
	return u.gro
}

// burst is how many datagrams of size one send call takes.
func (u *udpIO) burst(size int) int {
	return max(1, min(udpMaxSegments, udpMaxBurstBytes/size))
}

// send sends n datagrams of size, laid out one after another in b. It
// reports how many the kernel took: all or none with GSO, a prefix with
// sendmmsg.
func (u *udpIO) send(b []byte, size, n int) (int, error) {
	if u.gso && n > 1 {
		sent, err := u.sendGSO(b[:size*n], size)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EIO) && !errors.Is(err, unix.ENOPROTOOPT) && !errors.Is(err, unix.EOPNOTSUPP) {
			return sent, err
		}
		// No GSO here: the kernel lacks it (ENOPROTOOPT, EINVAL), the
		// device cannot checksum (EIO), or the segment exceeds the
		// path's MTU (EINVAL). Each datagram goes on its own from now.
		u.gso = false
	}
	return u.sendMany(b, size, n)
}

// sendGSO sends b as one super-buffer cut into datagrams of seg bytes.
func (u *udpIO) sendGSO(b []byte, seg int) (int, error) {
	if u.segOOB == nil {
		u.segOOB = make([]byte, unix.CmsgSpace(2))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&u.segOOB[0]))
		h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
		h.SetLen(unix.CmsgLen(2))
	}
	binary.NativeEndian.PutUint16(u.segOOB[unix.CmsgLen(0):], uint16(seg))
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(b))
	msg := unix.Msghdr{Iov: &iov, Control: &u.segOOB[0]}
	msg.SetIovlen(1)
	msg.SetControllen(len(u.segOOB))
	var serr error
	err := u.rc.Write(func(fd uintptr) bool {
		// Raw: the socket does not block (see recv).
		_, _, e := unix.RawSyscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&msg)), 0)
		if e != 0 {
			serr = e
		} else {
			serr = nil
		}
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, &net.OpError{Op: "sendmsg", Net: "udp", Err: osSyscallError("sendmsg", err)}
	}
	return len(b) / seg, nil
}

// sendMany sends n datagrams of size from b with sendmmsg.
func (u *udpIO) sendMany(b []byte, size, n int) (int, error) {
	if len(u.sendHdrs) < n {
		u.sendHdrs = make([]mmsghdr, n)
		u.sendIovs = make([]unix.Iovec, n)
	}
	for i := range n {
		u.sendIovs[i].Base = &b[i*size]
		u.sendIovs[i].SetLen(size)
		u.sendHdrs[i] = mmsghdr{}
		u.sendHdrs[i].hdr.Iov = &u.sendIovs[i]
		u.sendHdrs[i].hdr.SetIovlen(1)
	}
	var sent int
	var serr error
	err := u.rc.Write(func(fd uintptr) bool {
		// Raw: the socket does not block (see recv).
		r, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&u.sendHdrs[0])), uintptr(n), 0, 0, 0)
		if e == unix.EAGAIN {
			return false
		}
		sent = int(r)
		if e != 0 {
			sent, serr = 0, e
		}
		return true
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, &net.OpError{Op: "sendmmsg", Net: "udp", Err: osSyscallError("sendmmsg", err)}
	}
	return sent, nil
}

// recv waits for datagrams and reads what is queued, up to udpRecvSlots
// buffers. It calls each for every datagram in arrival order until each
// returns false, and reports the socket's drop counter (SO_RXQ_OVFL) as
// the last buffer carried it. nowait makes it return (0 datagrams) when
// nothing is queued, instead of waiting.
func (u *udpIO) recv(nowait bool, each func([]byte) bool) (drops int64, haveDrops bool, got int, err error) {
	if u.bufs == nil {
		u.bufs = make([]byte, udpRecvSlots*udpRecvBuf)
		u.oobs = make([]byte, udpRecvSlots*udpOOBSize)
		u.recvHdr = make([]mmsghdr, udpRecvSlots)
		u.recvIov = make([]unix.Iovec, udpRecvSlots)
	}
	for i := range udpRecvSlots {
		u.recvIov[i].Base = &u.bufs[i*udpRecvBuf]
		u.recvIov[i].SetLen(udpRecvBuf)
		h := &u.recvHdr[i]
		*h = mmsghdr{}
		h.hdr.Iov = &u.recvIov[i]
		h.hdr.SetIovlen(1)
		h.hdr.Control = &u.oobs[i*udpOOBSize]
		h.hdr.SetControllen(udpOOBSize)
	}
	var n int
	var rerr error
	err = u.rc.Read(func(fd uintptr) bool {
		// Raw, not through the runtime's system-call bookkeeping: the
		// socket does not block (Go opens it so), and entering a system
		// call the runtime knows of wakes its monitor thread (sysmon)
		// whenever the process was idle, a futex and then tens of its
		// 20 µs polls per wake-up. A stock iperf3 -u -b 100M client's
		// server took 3.8-4.0% of a CPU with Syscall6, 1.3-1.5% raw
		// (iperf3 -s: 0.8-0.9%); at 500M 6.4-8.0%, 2.1-2.6% raw (1.6-2.0%).
		r, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&u.recvHdr[0])), udpRecvSlots, 0, 0, 0)
		switch e {
		case 0:
			n = int(r)
		case unix.EAGAIN:
			return nowait
		case unix.EINTR:
			return false
		default:
			rerr = e
		}
		return true
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, false, 0, &net.OpError{Op: "recvmmsg", Net: "udp", Err: osSyscallError("recvmmsg", err)}
	}
	for i := range n {
		h := &u.recvHdr[i]
		b := u.bufs[i*udpRecvBuf : i*udpRecvBuf+int(h.n)]
		oob := u.oobs[i*udpOOBSize : i*udpOOBSize+int(h.hdr.Controllen)]
		seg := 0
		if len(oob) > 0 {
			var d int64
			var ok bool
			d, ok, seg = parseRecvOOB(oob)
			if ok {
				drops, haveDrops = d, true
			}
		}
		if seg <= 0 || seg >= len(b) {
			got++
			if !each(b) {
				return drops, haveDrops, got, nil
			}
			continue
		}
		for len(b) > 0 {
			m := min(seg, len(b))
			got++
			if !each(b[:m]) {
				return drops, haveDrops, got, nil
			}
			b = b[m:]
		}
	}
	return drops, haveDrops, got, nil
}

// udpOOBSize holds a receive's control messages: the drop counter and
// the GRO segment size.
var udpOOBSize = unix.CmsgSpace(4) * 2

// parseRecvOOB reads a received buffer's drop counter and GRO segment
// size (0: one datagram). It walks the control messages in place:
// unix.ParseSocketControlMessage allocates, once a datagram.
func parseRecvOOB(oob []byte) (drops int64, haveDrops bool, seg int) {
	hl := unix.CmsgLen(0)
	for len(oob) >= hl {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < hl || n > len(oob) {
			break
		}
		data := oob[hl:n]
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SO_RXQ_OVFL && len(data) >= 4:
			drops, haveDrops = int64(binary.NativeEndian.Uint32(data)), true
		case h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && len(data) >= 4:
			seg = int(binary.NativeEndian.Uint32(data))
		}
		oob = oob[min(len(oob), unix.CmsgSpace(n-hl)):]
	}
	return drops, haveDrops, seg
}

// osSyscallError names the system call of an errno, as os.SyscallError
// does; a deadline or a closed socket stays as the poller said it.
func osSyscallError(op string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return os.NewSyscallError(op, errno)
	}
	return err
}
