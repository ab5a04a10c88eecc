package perf

import (
	"fmt"
	"io"
	"net"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawReader reads a TCP stream as its Read does (the poller waits for
// data, the read deadline holds), but with raw read system calls: the
// socket never blocks (Go opens it so), and a call through the
// runtime's bookkeeping wakes its monitor thread (sysmon) whenever the
// process was idle, a futex and then its 20 µs polls at every wake-up
// (docs/BENCHMARKS.md).
func rawReader(c *net.TCPConn) (func(b []byte) (int, error), error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("raw reads: %w", err)
	}
	return func(b []byte) (int, error) {
		if len(b) == 0 {
			return 0, nil
		}
		var n uintptr
		var errno unix.Errno
		err := rc.Read(func(fd uintptr) bool {
			for {
				n, _, errno = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
				if errno != unix.EINTR {
					break
				}
			}
			return errno != unix.EAGAIN
		})
		switch {
		case err != nil:
			return 0, err // the deadline, or the socket closed
		case errno != 0:
			return 0, os.NewSyscallError("read", errno)
		case n == 0:
			return 0, io.EOF
		}
		return int(n), nil
	}, nil
}
