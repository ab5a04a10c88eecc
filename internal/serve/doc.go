// Package serve is the protocol-neutral half of tcpscope's server: one
// port (through package frontdoor) on which the protocols added to a
// Server (a Protocol each: the native one in internal/perf, iperf3's in
// internal/iperf3) take the connections whose first bytes they claim;
// admission of every test through one gate (package gate), whatever its
// protocol; the pairing of data connections and UDP streams with their
// tests (by a key a stream carries, by the test's key, or by the
// client's address for hellos that name nothing); and the server's end
// of each test on the engine (package engine), under the client's class
// of the limits table.
//
// UDP streams use the TCP port's number over UDP: the server answers a
// hello from a new socket bound to the same port and connected to the
// client, which from then on carries the stream.
package serve
