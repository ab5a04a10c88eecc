// Package perf is tcpscope's memory-to-memory test engine: the native
// control protocol, the TCP data streams, per-interval sampling of both ends'
// kernel state, and the results.
//
// A Server serves any number of concurrent tests on one net.Listener; a
// Client runs one test and returns a model.Run. During a test the server
// streams its own interval samples to the client over the control
// connection, so the client holds both ends' view in one timeline.
//
// Ending a test is what makes the byte counts honest: a sender that is done
// half-closes its data connection, the receiver reads to end of file, so
// bytes in flight when the sender stopped are counted by both ends, and the
// receiver's time runs until its last byte arrived. The wire format is
// described in docs/PROTOCOL.md.
package perf
