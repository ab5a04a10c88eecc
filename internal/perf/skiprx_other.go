//go:build !linux

package perf

import "net"

// truncReader is c.Read where MSG_TRUNC does not discard TCP bytes
// (Linux alone does): --skip-rx-copy copies, and the counts are the same.
func truncReader(c *net.TCPConn) (func(b []byte) (int, error), error) {
	return c.Read, nil
}
