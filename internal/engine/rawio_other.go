//go:build !linux

package engine

import "net"

// rawReader is the stream's own Read where raw system calls are not
// written for the platform; trunc (--skip-rx-copy) copies there too, as
// MSG_TRUNC discards TCP bytes on Linux alone, and the counts are the
// same.
func rawReader(c *net.TCPConn, trunc bool) (func(b []byte) (int, error), error) {
	return c.Read, nil
}
