package engine

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

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

// TransientUDPError: a datagram refused for a moment (the peer's port
// answered ICMP unreachable to an earlier one, a queue is full). A UDP
// test counts it as a lost datagram and goes on.
func TransientUDPError(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.EAGAIN)
}
