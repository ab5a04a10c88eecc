// Package engine moves a memory-to-memory test's bytes and measures
// them: the TCP data streams and UDP flows of one end of a test (End,
// Stream), per-interval sampling of the end's kernel state, and the
// totals. It speaks no protocol: the native protocol (internal/perf)
// and iperf3's (internal/iperf3) open the connections and run the
// control dialogue their own way, and hand the streams to an End.
//
// Ending a test is what makes the byte counts honest: a sender that is
// done half-closes its data connection (or, for a peer that ends by
// closing, is told to stop), the receiver reads to end of file, so
// bytes in flight when the sender stopped are counted by both ends, and
// the receiver's time runs until its last byte arrived.
package engine
