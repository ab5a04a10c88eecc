package tcpinfo

import (
	"context"
	"net"
	"syscall"
	"testing"
)

// The type-of-service byte reads back as set: set before connect on the
// dialling end, and on the accepting end after accept; from IP_TOS on
// IPv4 and IPV6_TCLASS on IPv6, over TCP and UDP. A dual-stack listener's
// IPv6 socket to an IPv4 peer reads IP_TOS, which setTOS sets too.
func TestTOS(t *testing.T) {
	const tos = 0xb8 // EF
	for _, c := range []struct{ network, listen, dial string }{
		{"tcp", "127.0.0.1:0", "127.0.0.1"},
		{"tcp", "[::1]:0", "::1"},
		{"tcp", "[::]:0", "127.0.0.1"}, // the accepted socket is IPv6, its peer mapped
		{"udp", "127.0.0.1:0", "127.0.0.1"},
		{"udp", "[::1]:0", "::1"},
	} {
		t.Run(c.network+" "+c.listen, func(t *testing.T) {
			var addr string
			var accepted chan net.Conn
			if c.network == "tcp" {
				ln, err := net.Listen("tcp", c.listen)
				if err != nil {
					t.Skipf("listen %s: %v", c.listen, err)
				}
				defer ln.Close()
				addr = ln.Addr().String()
				accepted = make(chan net.Conn, 1)
				go func() {
					conn, err := ln.Accept()
					if err != nil {
						conn = nil
					}
					accepted <- conn
				}()
			} else {
				pc, err := net.ListenPacket("udp", c.listen)
				if err != nil {
					t.Skipf("listen %s: %v", c.listen, err)
				}
				defer pc.Close()
				addr = pc.LocalAddr().String()
			}
			_, port, _ := net.SplitHostPort(addr)
			d := net.Dialer{Control: DialControl(SocketOptions{TOS: tos})}
			conn, err := d.DialContext(context.Background(), c.network, net.JoinHostPort(c.dial, port))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if got, err := TOS(conn.(syscall.Conn)); err != nil || got != tos {
				t.Fatalf("dialled: TOS %#x, %v; want %#x", got, err, tos)
			}
			if accepted == nil {
				return
			}
			sc := <-accepted
			if sc == nil {
				t.Fatal("accept failed")
			}
			defer sc.Close()
			if err := Apply(sc.(syscall.Conn), SocketOptions{TOS: tos}); err != nil {
				t.Fatal(err)
			}
			if got, err := TOS(sc.(syscall.Conn)); err != nil || got != tos {
				t.Fatalf("accepted: TOS %#x, %v; want %#x", got, err, tos)
			}
		})
	}
}
