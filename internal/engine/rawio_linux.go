package engine

import (
	"fmt"
	"io"
	"net"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawReader reads a TCP stream as its Read does (the poller waits for
// data, the read deadline holds), but with raw system calls: the socket
// never blocks (Go opens it so), and a call through the runtime's
// bookkeeping wakes its monitor thread (sysmon) whenever the process was
// idle, a futex and then its 20 µs polls at every wake-up
// (docs/BENCHMARKS.md).
//
// With trunc (--skip-rx-copy, iperf3 3.19's) it reads with recvfrom and
// MSG_TRUNC: on TCP the kernel takes up to len(b) bytes off the receive
// queue and discards them, so the count is the bytes that arrived but
// none is copied to b. Without, read(2), which the process's I/O
// accounting (rchar) counts as iperf3's reads are counted.
func rawReader(c *net.TCPConn, trunc bool) (func(b []byte) (int, error), error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("raw reads: %w", err)
	}
	call, name := func(fd uintptr, b []byte) (uintptr, unix.Errno) {
		n, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		return n, errno
	}, "read"
	if trunc {
		call, name = func(fd uintptr, b []byte) (uintptr, unix.Errno) {
			n, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_TRUNC, 0, 0)
			return n, errno
		}, "recvfrom"
	}
	return func(b []byte) (int, error) {
		if len(b) == 0 {
			return 0, nil
		}
		var n uintptr
		var errno unix.Errno
		err := rc.Read(func(fd uintptr) bool {
			for {
				n, errno = call(fd, b)
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
			return 0, os.NewSyscallError(name, errno)
		case n == 0:
			return 0, io.EOF
		}
		return int(n), nil
	}, nil
}
