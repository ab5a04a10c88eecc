//go:build !linux

package perf

import (
	"errors"
	"net"
	"syscall"
)

func enableDropCount(*net.UDPConn) bool { return false }

func isTransientSendError(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOBUFS)
}
