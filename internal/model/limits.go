package model

import "time"

// Limited is how a sender spent an interval, as fractions of its length:
// Web100's SndLimTime* states rebuilt from Linux's chrono counters.
//
// Linux's busy_time already includes the receive-window- and
// send-buffer-limited time, so the cwnd (network) share is
// busy − rwnd − sndbuf, and whatever is left of the interval is time the
// sender had nothing to send (idle or application-limited). Adding the three
// counters, as the ndt7 spec's appendix suggests, double-counts.
type Limited struct {
	Rwnd   float64 `json:"rwnd"`
	Sndbuf float64 `json:"sndbuf"`
	Cwnd   float64 `json:"cwnd"`
	App    float64 `json:"app"`
}

// LimitedBetween computes the fractions over the interval between two
// samples of the same socket. It is absent when the kernel lacks the chrono
// counters or the interval is empty.
func LimitedBetween(prev, cur *Sample) Opt[Limited] {
	dt := cur.At - prev.At
	b0, ok0 := prev.BusyTime.Get()
	b1, ok1 := cur.BusyTime.Get()
	if !ok0 || !ok1 || dt <= 0 || !cur.RwndLimited.OK || !cur.SndbufLimited.OK {
		return Opt[Limited]{}
	}
	busy := clampDur(b1-b0, dt)
	rwnd := clampDur(cur.RwndLimited.V-prev.RwndLimited.V, busy)
	sndbuf := clampDur(cur.SndbufLimited.V-prev.SndbufLimited.V, busy-rwnd)
	f := func(d time.Duration) float64 { return float64(d) / float64(dt) }
	return Some(Limited{
		Rwnd:   f(rwnd),
		Sndbuf: f(sndbuf),
		Cwnd:   f(busy - rwnd - sndbuf),
		App:    f(dt - busy),
	})
}

// clampDur keeps a counter delta within [0, max]: the chrono counters are
// quantised to jiffies, so over short intervals a delta can exceed the
// interval by up to one tick.
func clampDur(d, max time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	if d > max {
		return max
	}
	return d
}
