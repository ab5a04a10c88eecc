// Package tcpinfo is the only place kernel units become model units. It turns
// Linux's struct tcp_info (µs, ms, bytes per second, segments, bitfields)
// into a model.Sample of time.Duration, model.Bytes and model.Bitrate, and
// struct tcp_bbr_info into a model.BBRInfo. On sockets the program owns it
// takes samples (Read: tcp_info, the congestion control and its BBR model
// by getsockopt, the queues by ioctl) and reads and sets the socket options
// a measurement needs (buffers, MSS, congestion control, pacing).
//
// Decoding (Decode, DecodeBrief, DecodeBBR) is pure and length-aware: a
// kernel copies only as much of struct tcp_info as it knows, so a field
// beyond the returned length is absent (model.Opt with OK false), never a
// misleading zero. The bytes are read in the host's byte order, as the
// running kernel wrote them. The same decoders read the netlink
// INET_DIAG_INFO and INET_DIAG_BBRINFO payloads, which carry the same
// structs, for sockets tcpscope does not own (package sockdiag/inetdiag).
//
// The socket functions work on Linux; elsewhere they return ErrNotSupported
// (or do nothing, where nothing needs doing), so the rest of tcpscope still
// builds for other systems.
package tcpinfo
