package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab/profile"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/report"
	"github.com/tcpscope/tcpscope/internal/tcpmath"
)

// formula is a stand-in testbed for the plumbing tests: it answers each
// test with what the models predict for its path and hosts, plus a
// deterministic wobble. The namespace tests run the real lab.
type formula struct {
	path   profile.Path
	recv   profile.Host
	n      int
	closed *int
}

func (f *formula) Test(_ context.Context, cfg model.TestConfig) (*model.Run, error) {
	f.n++
	rate := capacity(&f.path)
	wnd := 4 * model.MiB
	if f.recv.Rmem[2] > 0 {
		wnd = f.recv.Rmem[2] / 2
		rate = math.Min(rate, float64(tcpmath.WindowRate(wnd, f.path.RTT)))
	}
	if f.path.Loss > 0 {
		rate = math.Min(rate, float64(max(cfg.Parallel, 1))*float64(tcpmath.Mathis(mss(&f.path), f.path.RTT, f.path.Loss, 1)))
	}
	rate *= 1 + 0.01*float64(f.n%3-1)
	run := &model.Run{Ended: "complete", Summary: []model.DirectionSummary{{Goodput: model.Some(model.Bitrate(rate)), RetransBytes: model.Some[model.Bytes](10)}}}
	run.Client.Totals = []model.StreamTotal{{SentBytes: model.Some[model.Bytes](1000), MaxSndWnd: model.Some(wnd)}}
	run.Client.Intervals = []model.Interval{{Streams: []model.StreamInterval{{Role: model.Sender, TCP: model.Sample{SndWnd: model.Some(wnd)}}}}}
	return run, nil
}

func (f *formula) Close() error { *f.closed++; return nil }

func env(t *testing.T) (Env, *int) {
	set, err := profile.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	closed := new(int)
	build := func(_ context.Context, p profile.Path, a, b profile.Host) (Testbed, error) {
		return &formula{path: p, recv: b, closed: closed}, nil
	}
	return Env{Build: build, Profiles: set, Quick: true, Duration: time.Second}, closed
}

func TestExperimentsPlumbing(t *testing.T) {
	for _, s := range Specs() {
		t.Run(s.Name, func(t *testing.T) {
			e, closed := env(t)
			res, err := Run(context.Background(), s.Name, e)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Points) < 2 || res.Table == nil || len(res.Table.Rows) != len(res.Points) || res.Chart == nil {
				t.Fatalf("incomplete result: %d points, table %v", len(res.Points), res.Table)
			}
			if *closed == 0 {
				t.Fatal("testbed never closed")
			}
			// The --json document names its schema first and its experiment.
			doc, err := json.Marshal(res)
			if err != nil || !strings.HasPrefix(string(doc), `{"schema":"`+ResultSchema+`","experiment":"`+s.Name+`"`) {
				t.Fatalf("lab run --json: %v %.120s", err, doc)
			}
			var buf bytes.Buffer
			if err := report.WriteTable(&buf, res.Table); err != nil {
				t.Fatal(err)
			}
			if err := report.WritePlot(&buf, res.Chart, "svg"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTuningStatistics(t *testing.T) {
	e, _ := env(t)
	e.Repeat = 4
	res, err := Run(context.Background(), "tuning", e)
	if err != nil {
		t.Fatal(err)
	}
	if res.Points[0].Label != "mistuned-2001" || res.Points[1].Label != "tuned" || res.Points[0].Summary.N != 4 {
		t.Fatalf("points %+v", res.Points)
	}
	// 64 KiB buffers over 20 ms cannot fill 100 Mbit/s; tuned hosts can.
	if res.Comparison == nil || res.Comparison.Ratio < 2 || res.Comparison.P > 0.01 {
		t.Fatalf("comparison %+v", res.Comparison)
	}
	if !strings.Contains(strings.Join(res.Table.Notes, "\n"), "improvement:") {
		t.Fatal("no improvement factor")
	}
}

func TestWindowSweepModel(t *testing.T) {
	e, _ := env(t)
	res, err := Run(context.Background(), "window-sweep", e)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Points {
		if math.Abs(p.Summary.Mean/p.Model-1) > 0.02 {
			t.Errorf("%s: measured %v, model %v", p.Label, p.Summary.Mean, p.Model)
		}
	}
	if !(res.Points[0].Summary.Mean < res.Points[1].Summary.Mean) {
		t.Error("goodput does not rise with the buffer")
	}
}

func TestUnknownNames(t *testing.T) {
	e, _ := env(t)
	if _, err := Run(context.Background(), "nope", e); err == nil || !strings.Contains(err.Error(), "window-sweep") {
		t.Fatalf("unknown experiment: %v", err)
	}
	e.Path = "mars"
	if _, err := Run(context.Background(), "loss-sweep", e); err == nil || !strings.Contains(err.Error(), "known:") {
		t.Fatalf("unknown path: %v", err)
	}
}
