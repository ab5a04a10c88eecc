package precision

import (
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/model"
)

// The judge: health needs a bottleneck verdict and no alarm anywhere; an
// impairment needs its cause (or a stand-in) in the verdict of its
// direction.
func TestJudge(t *testing.T) {
	run := &model.Run{Summary: []model.DirectionSummary{{Direction: model.ClientToServer, Goodput: model.Some[model.Bitrate](1e6)}}}
	f := func(id string, sev model.Severity, primary bool, d model.Direction) model.Finding {
		return model.Finding{ID: id, Severity: sev, Primary: primary, Direction: d}
	}
	c2s, s2c := model.ClientToServer, model.ServerToClient
	healthy := Scenario{Name: "h", Healthy: true, Direction: c2s}
	rwnd := Scenario{Name: "r", Want: "rwnd-limited", Also: []string{"wscale-off"}, Direction: c2s}
	for _, tc := range []struct {
		name string
		s    Scenario
		fs   []model.Finding
		ok   bool
	}{
		{"clean bottleneck", healthy, []model.Finding{f("bottleneck", model.Info, true, c2s)}, true},
		{"bottleneck with a warning beside", healthy, []model.Finding{f("bottleneck", model.Info, true, c2s), f("reordering", model.Warning, false, c2s)}, false},
		{"an alarm the other way", healthy, []model.Finding{f("bottleneck", model.Info, true, c2s), f("loss-limited", model.Critical, true, s2c)}, false},
		{"healthy called app-limited", healthy, []model.Finding{f("sender-app-limited", model.Info, true, c2s)}, false},
		{"no verdict", healthy, nil, false},
		{"still-growing where the path's physics says so", Scenario{Name: "h", Healthy: true, Direction: c2s, Also: []string{"still-growing"}}, []model.Finding{f("still-growing", model.Warning, true, c2s)}, true},
		{"still-growing where it should not be", healthy, []model.Finding{f("still-growing", model.Warning, true, c2s)}, false},
		{"still-growing at 80% of the path", Scenario{Name: "h", Healthy: true, Direction: c2s, AtoB: emulator.Impairment{Rate: 1.25e6}}, []model.Finding{f("still-growing", model.Warning, true, c2s)}, true},
		{"loss-limited at 80% of the path", Scenario{Name: "h", Healthy: true, Direction: c2s, AtoB: emulator.Impairment{Rate: 1.25e6}}, []model.Finding{f("loss-limited", model.Critical, true, c2s)}, true},
		{"loss-limited at 98% of the path", Scenario{Name: "h", Healthy: true, Direction: c2s, AtoB: emulator.Impairment{Rate: 1.06e6}}, []model.Finding{f("loss-limited", model.Critical, true, c2s)}, false},
		{"a policer at 80% of the path", Scenario{Name: "h", Healthy: true, Direction: c2s, AtoB: emulator.Impairment{Rate: 1.25e6}}, []model.Finding{f("policer", model.Critical, true, c2s)}, false},
		{"cause named", rwnd, []model.Finding{f("rwnd-limited", model.Critical, true, c2s)}, true},
		{"stand-in named", rwnd, []model.Finding{f("wscale-off", model.Critical, true, c2s)}, true},
		{"co-limit named", rwnd, []model.Finding{f("loss-limited", model.Critical, true, c2s), f("rwnd-limited", model.Critical, true, c2s)}, true},
		{"cost named by the verdict", rwnd, []model.Finding{f("bottleneck", model.Warning, true, c2s), f("rwnd-limited", model.Warning, false, c2s)}, true},
		{"cause only as info", rwnd, []model.Finding{f("bottleneck", model.Info, true, c2s), f("rwnd-limited", model.Info, false, c2s)}, false},
		{"a property beside", Scenario{Want: "timestamps-off", Beside: true, Direction: c2s}, []model.Finding{f("bottleneck", model.Info, true, c2s), f("timestamps-off", model.Info, false, c2s)}, true},
		{"cause in the other direction", rwnd, []model.Finding{f("rwnd-limited", model.Critical, true, s2c)}, false},
		{"heavy loss named on a path that lost 2%", healthy, []model.Finding{f("bottleneck", model.Warning, true, c2s), f("lossy-path", model.Warning, false, c2s)}, true},
		{"heavy loss: a lossy-path warning where 0.5% was lost", healthy, []model.Finding{f("bottleneck", model.Warning, true, c2s), f("lossy-path", model.Warning, false, c2s)}, false},
		{"heavy loss and something else", healthy, []model.Finding{f("bottleneck", model.Warning, true, c2s), f("lossy-path", model.Warning, false, c2s), f("reordering", model.Warning, false, c2s)}, false},
		{"heavy loss in timeouts: 10% of the life, 0.5% lost", healthy, []model.Finding{f("bottleneck", model.Warning, true, c2s), f("rto-stalls", model.Warning, false, c2s)}, true},
		{"heavy loss: rto-stalls where 0.5% was lost and no timeout", healthy, []model.Finding{f("bottleneck", model.Warning, true, c2s), f("rto-stalls", model.Warning, false, c2s)}, false},
	} {
		run := run
		if strings.HasPrefix(tc.name, "heavy loss") {
			// A sender whose kernel was read: its retransmitted share,
			// and its timeouts over a 4 s life.
			p, rto := 0.02, time.Duration(0)
			if strings.Contains(tc.name, "0.5%") {
				p = 0.005
			}
			if strings.Contains(tc.name, "10% of the life") {
				rto = 400 * time.Millisecond
			}
			final := &model.Sample{At: 4 * time.Second, KernelLen: 232, TotalRTO: model.Some[uint32](3), TotalRTOTime: model.Some(rto)}
			run = &model.Run{
				Streams: []model.StreamInfo{{ID: 1, Direction: c2s}},
				Client:  model.EndReport{Totals: []model.StreamTotal{{Stream: 1, Role: model.Sender, Final: final}}},
				Summary: []model.DirectionSummary{{Direction: c2s, Streams: 1, Duration: model.Some(4 * time.Second), Goodput: model.Some[model.Bitrate](1e6), LossRate: model.Some(p)}},
			}
		}
		if o := Judge(tc.s, run, tc.fs); o.OK != tc.ok {
			t.Errorf("%s: ok %v, want %v (verdict %v, alarms %v)", tc.name, o.OK, tc.ok, o.Verdict, o.Alarms)
		}
	}
}

// TestUnderfill: the physics that lets a healthy path's run say
// still-growing. Reno on 93.9 Mbit/s, 106 ms with a 0.27 BDP queue
// (r3000#102) halves to 64% of the BDP and regrows for half a minute;
// a one-BDP queue, or eight streams, keep the link busy through a cut;
// cubic's gentler cut leaves a 0.2 BDP queue's path underfull briefly
// on a short path and for seconds on a long fat one.
func TestUnderfill(t *testing.T) {
	bdp := func(rate model.Bitrate, rtt time.Duration) model.Bytes {
		return model.Bytes(float64(rate) / 8 * rtt.Seconds())
	}
	for _, tc := range []struct {
		name     string
		cc       string
		rate     model.Bitrate
		rtt      time.Duration
		queueBDP float64
		streams  int
		lo, hi   time.Duration
	}{
		{"reno, r3000#102", "reno", 93.9e6, 106 * time.Millisecond, 0.27, 1, 30 * time.Second, 36 * time.Second},
		{"reno, one BDP queued", "reno", 93.9e6, 106 * time.Millisecond, 1, 1, 0, 0},
		{"reno, eight streams", "reno", 93.9e6, 106 * time.Millisecond, 0.27, 8, 0, 0},
		{"cubic, 0.2 BDP, 10 ms", "cubic", 100e6, 10 * time.Millisecond, 0.2, 1, 0, 2 * time.Second},
		{"cubic, 0.2 BDP, 1 Gbit/s × 100 ms", "cubic", 1e9, 100 * time.Millisecond, 0.2, 1, 3 * time.Second, 4 * time.Second},
		{"bbr", "bbr", 1e9, 100 * time.Millisecond, 0.2, 1, 0, 0},
	} {
		b := bdp(tc.rate, tc.rtt)
		got := underfill(tc.cc, b, model.Bytes(tc.queueBDP*float64(b)), tc.streams, tc.rtt)
		if got < tc.lo || got > tc.hi {
			t.Errorf("%s: underfill %v, want %v to %v", tc.name, got, tc.lo, tc.hi)
		}
	}
}
