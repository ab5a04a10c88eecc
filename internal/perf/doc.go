// Package perf is tcpscope's memory-to-memory test engine and its native
// protocol: the TCP data streams and UDP flows, per-interval sampling of
// both ends' kernel state, and the totals.
//
// A Server serves any number of concurrent tests on one net.Listener; a
// Client runs one test and returns a model.Run. During a test the server
// streams its own interval samples to the client over the control
// connection, so the client holds both ends' view in one timeline.
//
// The server tells a connection's protocol by its first bytes: the native
// protocol and TLS are its own, and other protocols register through
// Server.Handle (a Protocol). They run their tests on the same engine
// (End, Stream) and are admitted under the same limits (Server.Admit).
// iperf3's protocol lives in internal/iperf3.
//
// Ending a test is what makes the byte counts honest: a sender that is done
// half-closes its data connection, the receiver reads to end of file, so
// bytes in flight when the sender stopped are counted by both ends, and the
// receiver's time runs until its last byte arrived. The wire format is
// described in docs/PROTOCOL.md.
package perf
