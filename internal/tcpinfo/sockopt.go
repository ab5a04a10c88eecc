package tcpinfo

import (
	"errors"

	"github.com/tcpscope/tcpscope/internal/model"
)

// ErrNotSupported is returned by the socket functions on systems other than
// Linux.
var ErrNotSupported = errors.New("tcpinfo: not supported on this operating system")

// SocketOptions are the tuning knobs a test applies to its sockets. A zero
// field leaves the kernel's default alone.
type SocketOptions struct {
	// SndBuf and RcvBuf are requested SO_SNDBUF/SO_RCVBUF sizes. Linux
	// clamps the request to net.core.wmem_max/rmem_max and grants
	// model.SockBufFor it; setting one also turns off the kernel's
	// autotuning of that buffer for the socket.
	SndBuf, RcvBuf model.Bytes
	// MSS is TCP_MAXSEG: the largest segment to send and to advertise.
	MSS int
	// Congestion is the congestion-control algorithm, e.g. "cubic" or "bbr".
	Congestion string
	// MaxPacingRate caps the socket's pacing rate (SO_MAX_PACING_RATE).
	MaxPacingRate model.Bitrate
	// TOS is the IP header's type-of-service byte (IP_TOS, IPV6_TCLASS
	// on an IPv6 socket): the DSCP in its top six bits (iperf3's -S).
	TOS int
}

// isZero reports whether o asks for nothing.
func (o SocketOptions) isZero() bool { return o == SocketOptions{} }
