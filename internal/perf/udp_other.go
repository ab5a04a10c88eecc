//go:build !linux

package perf

import (
	"errors"
	"net"
	"syscall"
)

// oobSize: no drop counter off Linux.
const oobSize = 0

func enableDropCount(*net.UDPConn) bool { return false }

func dropCount([]byte) (int64, bool) { return 0, false }

func isTransientSendError(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOBUFS)
}
