// Package frontdoor is a server's one port: it accepts connections,
// bounds the ones not yet doing anything (through a hook the server's
// admission supplies), reads each connection's first bytes and hands it
// to the protocol they name — tcpscope's native control and data
// connections, an iperf3 client, or HTTP (HTTP/1.1, HTTP/2 with TLS or by
// prior knowledge, and WebSocket upgrades) served by a net/http handler.
//
// With a TLS configuration it also terminates TLS, offering ALPN (the
// native protocol's id, h2 and http/1.1), and reads the first bytes again
// inside. Every protocol reaches the TCP socket beneath any TLS or HTTP
// layer (Conn.TCP, or ConnFrom in an HTTP handler's context), so that
// tcpinfo reads the kernel's view of the connection that is measured.
//
// It knows no protocol itself: routes are what the server gives it.
package frontdoor
