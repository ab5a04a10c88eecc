// Package dial opens a test client's connections to a server, for every
// protocol the clients speak (the native one, iperf3's): the address
// family and local address asked for, the test's socket options set
// before connect (where the MSS clamp and the receive buffer shape the
// SYN), a UDP stream's hello repeated until the server answers, and the
// errors of connecting turned into coded errors with hints.
package dial
