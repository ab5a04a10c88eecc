package tcpmath

import (
	"math"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// MathisC is the constant of the Mathis bound for periodic loss with
// delayed ACKs off, √(3/2). NDT used 1; the Cisco slides use 0.7 (delayed
// ACKs); callers choose.
const MathisC = 1.2247448713915890 // √(3/2)

// FiberSpeed is the speed of light in fiber the Networkers 2004 slides
// use, in km/s (about 2/3 of c in vacuum).
const FiberSpeed = 180000.0

// BDP is the bandwidth-delay product: the bytes in flight needed to keep
// a path of this rate and round-trip time full, and so the socket buffer
// each end needs.
func BDP(rate model.Bitrate, rtt time.Duration) model.Bytes {
	return model.Bytes(math.Round(float64(rate) / 8 * rtt.Seconds()))
}

// WindowRate is the most a window can carry per round trip: window/RTT.
func WindowRate(window model.Bytes, rtt time.Duration) model.Bitrate {
	if rtt <= 0 {
		return model.Bitrate(math.Inf(1))
	}
	return model.Bitrate(float64(window) * 8 / rtt.Seconds())
}

// Mathis is the upper bound on a single TCP flow's rate with random loss
// probability p: C·MSS / (RTT·√p). With p = 0 it is unbounded (+Inf).
func Mathis(mss model.Bytes, rtt time.Duration, p, c float64) model.Bitrate {
	if p <= 0 || rtt <= 0 {
		return model.Bitrate(math.Inf(1))
	}
	return model.Bitrate(c * float64(mss) * 8 / (rtt.Seconds() * math.Sqrt(p)))
}

// MathisLoss inverts the bound: the highest loss probability at which a
// flow can still reach target, (C·MSS / (target·RTT))². The Web100 paper's
// equation 2 is this with C = 1.
func MathisLoss(target model.Bitrate, mss model.Bytes, rtt time.Duration, c float64) float64 {
	if target <= 0 || rtt <= 0 {
		return 1
	}
	r := c * float64(mss) * 8 / (float64(target) * rtt.Seconds())
	return min(r*r, 1)
}

// BERRate is the Mathis bound when loss comes from bit errors, not
// congestion: a packet of mtu bytes is lost with probability 8·MTU·BER, so
// the rate is C/RTT·√(MTU/(8·BER)) (in bytes, ×8 for bits) and grows with
// √MTU rather than linearly.
func BERRate(mtu model.Bytes, rtt time.Duration, ber, c float64) model.Bitrate {
	p := 8 * float64(mtu) * ber
	return Mathis(mtu, rtt, p, c)
}

// PacketsPerSecond is the packet rate of a stream of packets of the given
// size at rate.
func PacketsPerSecond(rate model.Bitrate, size model.Bytes) float64 {
	if size <= 0 {
		return 0
	}
	return float64(rate) / (8 * float64(size))
}

// FiberRTT is the round-trip propagation time over a fiber route of the
// given one-way length.
func FiberRTT(km float64) time.Duration {
	return time.Duration(2 * km / FiberSpeed * float64(time.Second))
}

// TransferTime is how long n bytes take at rate.
func TransferTime(n model.Bytes, rate model.Bitrate) time.Duration {
	if rate <= 0 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(float64(n) * 8 / float64(rate) * float64(time.Second))
}
