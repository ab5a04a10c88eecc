package model

// Linux doubles a SO_SNDBUF or SO_RCVBUF request, after clamping it at
// net.core.wmem_max or rmem_max, and reports the doubled size when read
// back: the extra half is for the kernel's bookkeeping (each packet's
// sk_buff), so that the request is about what the buffer holds of data.
// Autotuning follows the same rule (tcp_adv_win_scale): about half of a
// receive buffer becomes window, and a send buffer holds about half of
// its size unacknowledged. This is the one place that factor is stated.
const sockBufOverhead = 2

// SockBufFor is the socket buffer, as the kernel holds and reports it,
// that carries data bytes of data: what Linux grants for a request of
// data (below the clamp), and the buffer a window of data needs.
func SockBufFor(data Bytes) Bytes { return sockBufOverhead * data }

// SockBufData is the data a socket buffer of buf (as the kernel reports
// it) carries: the request it was granted for, or the window it allows.
func SockBufData(buf Bytes) Bytes { return buf / sockBufOverhead }
