//go:build !linux

package perf

import "net"

// rawReader is the stream's own Read where raw system calls are not
// written for the platform.
func rawReader(c *net.TCPConn) (func(b []byte) (int, error), error) { return c.Read, nil }
