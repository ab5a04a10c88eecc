// Package tcpinfo is the only place kernel units become model units. It turns
// Linux's struct tcp_info (µs, ms, bytes per second, segments, bitfields)
// into a model.Sample of time.Duration, model.Bytes and model.Bitrate, and it
// reads and sets the socket options a measurement needs (buffers, MSS,
// congestion control, pacing) on sockets the program owns.
//
// Decoding is pure and length-aware: a kernel copies only as much of
// struct tcp_info as it knows, so a field beyond the returned length is
// absent (model.Opt with OK false), never a misleading zero. The same
// decoder will serve the netlink INET_DIAG_INFO payload, which carries the
// same struct, when tcpscope watches sockets it does not own.
//
// The socket functions work on Linux; elsewhere they return ErrNotSupported,
// so the rest of tcpscope still builds for other systems.
package tcpinfo
