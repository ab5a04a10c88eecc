//go:build !linux

package engine

import (
	"errors"
	"net"
	"syscall"
)

// udpIO moves one datagram a call off Linux: no sendmmsg, GSO or GRO.
type udpIO struct {
	c   *net.UDPConn
	buf []byte
}

func newUDPIO(c *net.UDPConn, offload bool) (*udpIO, error) { return &udpIO{c: c}, nil }

func (u *udpIO) enableGRO() bool { return false }

func (u *udpIO) burst(size int) int { return 1 }

func (u *udpIO) send(b []byte, size, n int) (int, error) {
	for i := range n {
		if _, err := u.c.Write(b[i*size : (i+1)*size]); err != nil {
			return i, err
		}
	}
	return n, nil
}

func (u *udpIO) recv(nowait bool, each func([]byte) bool) (drops int64, haveDrops bool, got int, err error) {
	if u.buf == nil {
		u.buf = make([]byte, 65536)
	}
	var n int
	if nowait {
		// One read that never waits for readiness, as drainQueued's.
		rc, err := u.c.SyscallConn()
		if err != nil {
			return 0, false, 0, err
		}
		var rerr error
		if err := rc.Read(func(fd uintptr) bool { n, rerr = syscall.Read(int(fd), u.buf); return true }); err != nil {
			return 0, false, 0, err
		}
		if errors.Is(rerr, syscall.EAGAIN) {
			return 0, false, 0, nil
		}
		if rerr != nil {
			return 0, false, 0, rerr
		}
	} else if n, err = u.c.Read(u.buf); err != nil {
		return 0, false, 0, err
	}
	each(u.buf[:n])
	return 0, false, 1, nil
}
