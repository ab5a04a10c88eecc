package perf

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// truncReader reads c with MSG_TRUNC (--skip-rx-copy, iperf3 3.19's):
// on TCP the kernel takes up to len(b) bytes off the receive queue and
// discards them, so the count is the bytes that arrived but none is
// copied to b. It waits for readiness on Go's poller, so c's read
// deadline holds as for c.Read.
func truncReader(c *net.TCPConn) (func(b []byte) (int, error), error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("skip-rx-copy: %w", err)
	}
	return func(b []byte) (int, error) {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			for {
				n, _, rerr = unix.Recvfrom(int(fd), b, unix.MSG_TRUNC)
				if !errors.Is(rerr, unix.EINTR) {
					break
				}
			}
			return !errors.Is(rerr, unix.EAGAIN)
		})
		switch {
		case err != nil:
			return 0, err // the deadline, or the socket closed
		case rerr != nil:
			return 0, os.NewSyscallError("recvfrom", rerr)
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}, nil
}
