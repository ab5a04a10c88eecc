package tcpinfo

import (
	"fmt"
	"net"
	"syscall"
)

// Socket is the socket beneath c, for Read and the socket options: c
// itself when it is one, else what it wraps, unwrapped through NetConn
// (a *tls.Conn, the front door's connections) as far as it goes.
func Socket(c net.Conn) (syscall.Conn, error) {
	for c != nil {
		if sc, ok := c.(syscall.Conn); ok {
			return sc, nil
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = w.NetConn()
	}
	return nil, fmt.Errorf("a %T is no socket and wraps none", c)
}
