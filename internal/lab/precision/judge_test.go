package precision

import (
	"strings"
	"testing"
	"time"

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
