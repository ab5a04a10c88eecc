//go:build !linux

package engine

import (
	"errors"
	"net"
	"syscall"
)

func enableDropCount(*net.UDPConn) bool { return false }

// TransientUDPError: a datagram refused for a moment.
func TransientUDPError(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOBUFS)
}
