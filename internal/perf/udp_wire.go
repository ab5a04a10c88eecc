package perf

import "encoding/binary"

// The native protocol's UDP handshake: a stream's hello datagram and
// the server's answer (docs/PROTOCOL.md).

// udpMagic opens a native UDP stream's hello datagram: magic, the test's
// cookie and the stream id, as on TCP.
const udpMagic = "TCPSCOPU"

// udpHelloLen is the length of a native UDP hello.
const udpHelloLen = magicLen + cookieLen + 2

// udpAnswerMagic opens the server's answer to a hello: magic, the stream
// id and a token the client echoes on the control connection before the
// server sends the stream anything more. The answer is no longer than the
// hello, so a hello from a forged address makes the server send no more
// than it got.
const udpAnswerMagic = "TCPSCOPA"

// udpTokenLen is the length of a UDP stream's token.
const udpTokenLen = 16

// udpAnswer is the server's answer to stream id's hello.
func udpAnswer(id int, token []byte) []byte {
	b := make([]byte, 0, magicLen+2+udpTokenLen)
	b = append(b, udpAnswerMagic...)
	b = binary.BigEndian.AppendUint16(b, uint16(id))
	return append(b, token...)
}

// parseUDPAnswer reads the token of an answer to stream id's hello.
func parseUDPAnswer(b []byte, id int) (token []byte, ok bool) {
	if len(b) != magicLen+2+udpTokenLen || string(b[:magicLen]) != udpAnswerMagic || int(binary.BigEndian.Uint16(b[magicLen:])) != id {
		return nil, false
	}
	return append([]byte(nil), b[magicLen+2:]...), true
}

// udpHello is a native UDP stream's hello.
func udpHello(cookie []byte, id int) []byte {
	b := make([]byte, 0, udpHelloLen)
	b = append(b, udpMagic...)
	b = append(b, cookie...)
	return binary.BigEndian.AppendUint16(b, uint16(id))
}

// isUDPHello tells a native UDP stream's hello.
func isUDPHello(b []byte) bool {
	_, _, ok := parseUDPHello(b)
	return ok
}

// parseUDPHello reads a native hello's cookie and stream id.
func parseUDPHello(b []byte) (cookie []byte, id int, ok bool) {
	if len(b) != udpHelloLen || string(b[:magicLen]) != udpMagic {
		return nil, 0, false
	}
	return b[magicLen : magicLen+cookieLen], int(binary.BigEndian.Uint16(b[magicLen+cookieLen:])), true
}
