package model

import "time"

// MinRTT is stream id's minimum round trip as this end's kernel measured
// it (its final min_rtt), corrected for the millisecond floor of the
// kernel's timestamp samples; absent when the kernel was not read.
//
// Linux times most round trips to the microsecond, from when each
// segment was sent, but an acknowledgment of a retransmitted segment
// (Karn's ambiguity) is timed from the TCP timestamp it echoes, whose
// clock ticks in milliseconds: a whole number of them, up to one below
// the path's round trip, and min_rtt keeps the lowest sample for five
// minutes (tcp_min_rtt_wlen). After one loss a 2.7 ms path then reads
// 2 ms, and the 0.7 ms between looks like a queue. A min_rtt of whole
// milliseconds under a microsecond-timed one read earlier (the
// handshake's, StartMinRTT, or an interval's sample) by less than a
// millisecond is that floor: the earlier reading is the path's.
func (e *EndReport) MinRTT(id int) Opt[time.Duration] {
	var t *StreamTotal
	for i := range e.Totals {
		if e.Totals[i].Stream == id {
			t = &e.Totals[i]
		}
	}
	if t == nil || t.Final == nil {
		return Opt[time.Duration]{}
	}
	kernel, ok := t.Final.MinRTT.Get()
	if !ok || kernel <= 0 || kernel%time.Millisecond != 0 {
		return t.Final.MinRTT
	}
	timed := func(m time.Duration) bool {
		return m%time.Millisecond != 0 && m > kernel && m < kernel+time.Millisecond
	}
	best := time.Duration(0)
	if m, ok := t.StartMinRTT.Get(); ok && timed(m) {
		best = m
	}
	for _, iv := range e.Intervals {
		for _, si := range iv.Streams {
			if m, ok := si.TCP.MinRTT.Get(); ok && si.Stream == id && timed(m) && (best == 0 || m < best) {
				best = m
			}
		}
	}
	if best == 0 {
		return t.Final.MinRTT
	}
	return Some(best)
}
