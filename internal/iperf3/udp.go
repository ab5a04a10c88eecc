package iperf3

// A UDP stream of iperf3's opens with a hello datagram to the server's
// port, which the server answers from a socket of the stream's own. The
// hello names no test: a serve.Server gives it to the one iperf3 UDP test
// of its sender's address that holds the turn (serve.TestSpec.UDPHello).

// udpHello and udpReply are iperf3's UDP stream handshake as 3.17+ puts
// it on the wire. Older versions sent host-order integers (or the legacy
// 987654321), so each end takes any four bytes.
var (
	udpHello = []byte("9876")
	udpReply = []byte("6789")
)

// isUDPHello says whether a datagram is an iperf3 client's UDP hello.
func isUDPHello(b []byte) bool { return len(b) == len(udpHello) }

// isUDPReply says whether a datagram is an iperf3 server's answer to a
// hello.
func isUDPReply(b []byte) bool { return len(b) == len(udpReply) }
