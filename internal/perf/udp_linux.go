package perf

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// oobSize holds one SO_RXQ_OVFL control message.
var oobSize = unix.CmsgSpace(4)

// enableDropCount asks the kernel to attach the socket's drop counter to
// received datagrams (SO_RXQ_OVFL): it tells loss in this host's full
// receive buffer from loss on the path.
func enableDropCount(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1)
	}); err != nil {
		return false
	}
	return serr == nil
}

// dropCount reads the cumulative drop counter from a datagram's control
// messages. The kernel attaches it only once the count is non-zero.
func dropCount(oob []byte) (int64, bool) {
	if len(oob) == 0 {
		return 0, false
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_RXQ_OVFL && len(m.Data) >= 4 {
			return int64(binary.NativeEndian.Uint32(m.Data)), true
		}
	}
	return 0, false
}

// isTransientSendError: a datagram refused for a moment (the peer's port
// answered ICMP unreachable to an earlier one, a queue is full). A UDP
// test counts it as a lost datagram and goes on.
func isTransientSendError(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EAGAIN)
}
