// Package perf is tcpscope's native test protocol: a Client that runs
// one test and returns a model.Run, and the protocol's server side on a
// serve.Server's port (Add), which serves any number of concurrent tests.
// During a test the server streams its own interval samples to the
// client over the control connection, so the client holds both ends'
// view in one timeline. Both ends move and sample their bytes on the
// engine (package engine).
//
// A test's control connection may run inside TLS (ALPN tcpscope/1), its
// data connections and UDP streams name their stream by a key the server
// gave in its welcome, and a UDP stream's hello is answered with a token
// the client echoes before the server sends it anything more. Ending a
// test is what makes the byte counts honest: a sender that is done
// half-closes its data connection, the receiver reads to end of file, so
// bytes in flight when the sender stopped are counted by both ends. The
// wire format is described in docs/PROTOCOL.md.
package perf
