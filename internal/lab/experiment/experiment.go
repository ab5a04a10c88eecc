package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab/profile"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/report"
	"github.com/tcpscope/tcpscope/internal/stats"
)

// Testbed is a pair of lab hosts joined by a path: tests run from host A
// (the client) to host B (the server).
type Testbed interface {
	Test(ctx context.Context, cfg model.TestConfig) (*model.Run, error)
	Close() error
}

// Builder makes a testbed for a path, with host tunings for A and B.
type Builder func(ctx context.Context, path profile.Path, a, b profile.Host) (Testbed, error)

// Env is what an experiment runs with.
type Env struct {
	Build    Builder
	Profiles profile.Set
	// Path overrides the experiment's default path; Hosts its host tuning
	// (applied to both ends).
	Path  string
	Hosts string
	// Repeat is the number of runs per point (default 1, tuning and
	// cc-compare 5); Duration each run's length (default 10 s), Omit the
	// slow start left out (default 2 s or 2 RTT, whichever is larger).
	Repeat   int
	Duration time.Duration
	Omit     time.Duration
	// Congestion is the algorithm where the experiment does not vary it.
	Congestion string
	// MathisC is the Mathis constant (default √(3/2)).
	MathisC float64
	// Quick runs fewer points, for tests and demos.
	Quick bool
	// Progress, when set, is told about each run.
	Progress func(format string, args ...any)
}

// Spec names an experiment.
type Spec struct {
	Name        string
	Description string
	// DefaultPath and DefaultHosts are used unless Env overrides them.
	DefaultPath, DefaultHosts string
	// DefaultCongestion is the algorithm unless Env.Congestion or a host
	// tuning sets one: reno where the model (Mathis) is reno's.
	DefaultCongestion string
	run               func(ctx context.Context, x *exp) (*Result, error)
}

// Specs lists the experiments in the order they are documented.
func Specs() []Spec {
	return []Spec{
		{"window-sweep", "goodput against socket buffer size, beside window/RTT", "gigasunet-21ms", "stock", "", windowSweep},
		{"loss-sweep", "goodput against random loss, beside the Mathis bound", "lossy-wan", "tuned", "reno", lossSweep},
		{"mtu-sweep", "MTU 1500, 4470 and 9000 on a lossy path, beside the linear and √MTU models", "lossy-wan", "tuned", "reno", mtuSweep},
		{"tuning", "2001-era hosts against tuned hosts, with statistics over repeated runs", "vhp", "", "", tuning},
		{"cc-compare", "cubic, bbr and reno on a long lossy path", "transatlantic", "tuned", "", ccCompare},
		{"parallel", "1, 2, 4 and 8 streams under random loss", "lossy-wan", "tuned", "reno", parallel},
	}
}

// Lookup finds an experiment by name.
func Lookup(name string) (Spec, error) {
	var names []string
	for _, s := range Specs() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Spec{}, fmt.Errorf("unknown experiment %q (known: %s)", name, strings.Join(names, ", "))
}

// Point is one configuration's measurements.
type Point struct {
	Label string  `json:"label"`
	X     float64 `json:"x"`
	// Goodput of each run, bit/s, and their summary.
	Runs    []float64     `json:"runs"`
	Summary stats.Summary `json:"summary"`
	// Model is what the experiment's model predicts for this point, bit/s
	// (absent where there is no model).
	Model float64 `json:"model,omitempty"`
	// Retransmitted share of the bytes sent, over all runs.
	LossRate float64 `json:"loss_rate"`
}

// ResultSchema is the schema version of Result as `tcpscope lab run
// --json` writes it (docs/JSON.md); as with model.SchemaVersion, a field
// that goes or changes meaning bumps the number, new fields do not.
const ResultSchema = "tcpscope.lab/1"

// Result is an experiment's outcome.
type Result struct {
	Schema     string        `json:"schema"` // ResultSchema
	Experiment string        `json:"experiment"`
	Path       string        `json:"path"`
	Hosts      string        `json:"hosts"`
	Points     []Point       `json:"points"`
	Table      *report.Table `json:"table"`
	Chart      *report.Chart `json:"-"`
	// Comparison holds Welch's test where the experiment compares two sets.
	Comparison *stats.Comparison `json:"comparison,omitempty"`
}

// Run runs the named experiment.
func Run(ctx context.Context, name string, env Env) (*Result, error) {
	spec, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	x := &exp{Env: env, spec: spec}
	if x.Path == "" {
		x.Path = spec.DefaultPath
	}
	if x.Hosts == "" {
		x.Hosts = spec.DefaultHosts
	}

	if x.path, err = env.Profiles.Path(x.Path); err != nil {
		return nil, err
	}
	if x.Hosts != "" {
		if x.host, err = env.Profiles.Host(x.Hosts); err != nil {
			return nil, err
		}
	}
	if x.Duration == 0 {
		x.Duration = 10 * time.Second
	}
	if x.Omit == 0 {
		x.Omit = max(2*time.Second, 2*x.path.RTT)
	}
	if x.MathisC == 0 {
		x.MathisC = math.Sqrt(1.5)
	}
	if x.Progress == nil {
		x.Progress = func(string, ...any) {}
	}
	res, err := spec.run(ctx, x)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	res.Schema, res.Experiment, res.Path, res.Hosts = ResultSchema, name, x.Path, x.Hosts
	return res, nil
}

// exp is one experiment's run state.
type exp struct {
	Env
	spec Spec
	path profile.Path
	host profile.Host
}

func (x *exp) repeat(def int) int {
	if x.Repeat > 0 {
		return x.Repeat
	}
	return def
}

// config is a test's configuration between hosts tuned as h, before the
// experiment varies it. The host's MSS and congestion control are the
// lab's to apply (its routes' advmss, its sysctl) unless the experiment
// chooses an algorithm.
func (x *exp) config(h profile.Host) model.TestConfig {
	cc := x.Congestion
	if cc == "" && h.Congestion == "" {
		cc = x.spec.DefaultCongestion
	}
	return model.TestConfig{Duration: x.Duration, Omit: x.Omit, Interval: time.Second, Congestion: cc}
}

// measure runs cfg n times on tb and summarises the goodput.
func (x *exp) measure(ctx context.Context, tb Testbed, label string, cfg model.TestConfig, n int) (Point, error) {
	p := Point{Label: label}
	var sent, retrans float64
	for i := range n {
		run, err := tb.Test(ctx, cfg)
		if err != nil {
			return p, fmt.Errorf("%s, run %d: %w", label, i+1, err)
		}
		if run.Ended != "complete" || len(run.Summary) == 0 {
			// An interrupted or cut-short run is not a measurement.
			return p, fmt.Errorf("%s, run %d: the test ended early (%s)", label, i+1, run.Ended)
		}
		d := run.Summary[0]
		g, ok := d.Goodput.Get()
		if !ok || d.FromAcks {
			return p, fmt.Errorf("%s, run %d: the receiver's report is missing", label, i+1)
		}
		p.Runs = append(p.Runs, float64(g))
		if r, ok := d.RetransBytes.Get(); ok {
			retrans += float64(r)
		}
		for _, t := range run.Client.Totals {
			if b, ok := t.SentBytes.Get(); ok {
				sent += float64(b)
			}
		}
		x.Progress("%s %s run %d/%d: %v", x.spec.Name, label, i+1, n, d.Goodput)
	}
	p.Summary, _ = stats.Summarize(p.Runs)
	if sent > 0 {
		p.LossRate = retrans / sent
	}
	return p, nil
}

// withTestbed builds a testbed, runs f and always closes it.
func (x *exp) withTestbed(ctx context.Context, path profile.Path, a, b profile.Host, f func(Testbed) error) error {
	tb, err := x.Build(ctx, path, a.For(&path), b.For(&path))
	if err != nil {
		return err
	}
	ferr := f(tb)
	return errors.Join(ferr, tb.Close())
}

// mbit formats a rate as a plain number of Mbit/s for tables and plots.
func mbit(r float64) float64 { return r / 1e6 }

func fmtMbit(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "-"
	}
	return fmt.Sprintf("%.1f", mbit(r))
}

// fmtCI prints a 95% confidence interval in Mbit/s, "-" for one run.
func fmtCI(s stats.Summary) string {
	if s.N < 2 {
		return "-"
	}
	return fmt.Sprintf("%s–%s", fmtMbit(s.CILow), fmtMbit(s.CIHigh))
}

// pointsTable is the common table: label, n, mean, 95% CI, median, model.
func pointsTable(title, labelCol string, pts []Point, withModel bool) *report.Table {
	t := &report.Table{Title: title, Columns: []string{labelCol, "n", "mean Mbit/s", "95% CI", "median", "retrans"}}
	if withModel {
		t.Columns = append(t.Columns, "model Mbit/s", "measured/model")
	}
	for _, p := range pts {
		s := p.Summary
		ci := fmtCI(s)
		row := []string{p.Label, fmt.Sprint(s.N), fmtMbit(s.Mean), ci, fmtMbit(s.Median), fmt.Sprintf("%.3f%%", 100*p.LossRate)}
		if withModel {
			ratio := "-"
			if p.Model > 0 && !math.IsInf(p.Model, 0) {
				ratio = fmt.Sprintf("%.2f", s.Mean/p.Model)
			}
			row = append(row, fmtMbit(p.Model), ratio)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// chartOf plots the measured means (with their intervals) and the model.
func chartOf(title, xlabel string, logX bool, pts []Point, modelName string) *report.Chart {
	c := &report.Chart{Title: title, XLabel: xlabel, YLabel: "goodput (Mbit/s)", LogX: logX}
	meas := report.Series{Name: "measured (mean, 95% CI)"}
	mod := report.Series{Name: modelName, Model: true}
	for _, p := range pts {
		pt := report.Point{X: p.X, Y: mbit(p.Summary.Mean)}
		if p.Summary.N > 1 {
			pt.Low, pt.High = mbit(p.Summary.CILow), mbit(p.Summary.CIHigh)
		}
		meas.Points = append(meas.Points, pt)
		if p.Model > 0 {
			mod.Points = append(mod.Points, report.Point{X: p.X, Y: mbit(p.Model)})
		}
	}
	c.Series = append(c.Series, meas)
	if len(mod.Points) > 0 {
		c.Series = append(c.Series, mod)
	}
	return c
}

// pick returns the quick subset of values when asked.
func pick[T any](x *exp, all, quick []T) []T {
	if x.Quick {
		return slices.Clone(quick)
	}
	return slices.Clone(all)
}
