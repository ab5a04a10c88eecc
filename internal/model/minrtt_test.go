package model

import (
	"testing"
	"time"
)

func TestMinRTTFloor(t *testing.T) {
	ms := time.Millisecond
	us := time.Microsecond
	end := func(final Opt[time.Duration], start Opt[time.Duration], samples ...time.Duration) *EndReport {
		e := &EndReport{Totals: []StreamTotal{{Stream: 3, Role: Sender, StartMinRTT: start}}}
		if final.OK || final.V != 0 {
			e.Totals[0].Final = &Sample{MinRTT: final}
		}
		for i, m := range samples {
			e.Intervals = append(e.Intervals, Interval{Index: i, Streams: []StreamInterval{
				{Stream: 3, TCP: Sample{MinRTT: Some(m)}},
				{Stream: 4, TCP: Sample{MinRTT: Some(2*ms + 10*us)}}, // another stream's
			}})
		}
		return e
	}
	for _, c := range []struct {
		name string
		e    *EndReport
		want Opt[time.Duration]
	}{
		{"microsecond-timed stays", end(Some(2700*us), Some(2750*us)), Some(2700 * us)},
		{"floored under the handshake's", end(Some(2*ms), Some(2710*us)), Some(2710 * us)},
		{"floored under an interval's, lower than the handshake's", end(Some(2*ms), Some(2710*us), 2705*us, 2*ms), Some(2705 * us)},
		{"a whole millisecond far under the earlier readings is the path's", end(Some(2*ms), Some(3200*us), 3100*us), Some(2 * ms)},
		{"a whole millisecond with nothing timed before", end(Some(2*ms), Opt[time.Duration]{}, 2*ms), Some(2 * ms)},
		{"another stream's reading is not this one's", end(Some(2*ms), Opt[time.Duration]{}), Some(2 * ms)},
		{"kernel not read", &EndReport{Totals: []StreamTotal{{Stream: 3}}}, Opt[time.Duration]{}},
		{"no such stream", &EndReport{}, Opt[time.Duration]{}},
	} {
		if got := c.e.MinRTT(3); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
