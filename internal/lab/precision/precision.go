package precision

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/lab/experiment"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// Outcome is one run of a scenario and how the verdict fared.
type Outcome struct {
	Scenario string
	// Verdict is what the headline of the scenario's direction names:
	// its limits (primary, co-limits included) and every warning or
	// critical finding beside them.
	Verdict []string
	// Alarms are the warning and critical findings, any direction.
	Alarms []string
	// Goodput of the scenario's direction, when measured.
	Goodput model.Opt[model.Bitrate]
	// Loss is the retransmitted share of the direction's bytes, when
	// measured. A healthy path's run whose loss is heavy (diagnose.Heavy:
	// 1% retransmitted, or 5% of a stream's life in timeouts) carries the
	// loss finding the rules require whatever the cause (bbr overflowing
	// its queue, slow start's overshoot, eight streams' windows too small
	// for fast retransmit): LossNoted says it did, and the run is counted
	// apart, not as a false alarm.
	Loss model.Opt[float64]
	// Heavy: the direction's loss was heavy (diagnose.Heavy).
	Heavy     bool
	LossNoted bool
	// SilentLoss: the direction's loss was heavy (diagnose.Heavy) and no
	// finding of warning severity or more names the loss (the
	// no-silent-loss rule broken); any makes the run wrong.
	SilentLoss bool
	// OK: a healthy scenario's verdict is the bottleneck (or healthy)
	// with no alarm; an impaired one's verdict names its cause.
	OK bool
	// Err is a run that could not be made (the lab failed), which counts
	// as neither hit nor miss.
	Err error
	// Detail is the verdict's findings' summaries: their evidence in
	// words, to tell after the fact why a run missed.
	Detail string
	// FixProblems are the fixes of the diagnosis that would lower a
	// setting an end has, or leave a window or buffer limit where it is
	// (diagnose.FixProblems); any makes the run wrong.
	FixProblems []string
	// Run is the test's result, for saving (lab precision --save).
	Run *model.Run
}

// lossNotes are the findings a healthy path's own heavy loss carries: the
// loss, and the timeouts it caused (four bbr streams overflowing a
// 0.8 BDP queue lost 15% and timed out).
var lossNotes = map[string]bool{"lossy-path": true, "rto-stalls": true}

// shortfalls are the verdicts that say a transfer fell short of its
// path: the window still growing when the test ended, or the loss of
// the path's own queue holding a loss-based sender under its rate (a
// queue shorter than a BDP, or than one burst).
var shortfalls = map[string]bool{"still-growing": true, "loss-limited": true}

// shortfall: a healthy path's transfer under this share of the payload
// its bottleneck carries (the rate drawn, less the IP and TCP headers of
// a 1500-byte packet) did not fill the path. 10% is more than a
// sawtooth at the path's rate leaves (a full path runs at 0.95 of it and
// more) and less than one held under it costs.
const shortfall = 0.9

// fellShort reports whether goodput fell under shortfall of the payload
// rate of s's bottleneck.
func fellShort(s Scenario, goodput model.Opt[model.Bitrate]) bool {
	rate := s.AtoB.Rate
	if s.Direction == model.ServerToClient {
		rate = s.BtoA.Rate
	}
	g, ok := goodput.Get()
	return ok && rate > 0 && float64(g) < shortfall*float64(rate)*1448/1500
}

// healthyVerdicts are what a clean path's headline may be.
var healthyVerdicts = []string{"bottleneck", "healthy"}

// Judge decides a run of s from its findings.
func Judge(s Scenario, run *model.Run, fs []model.Finding) Outcome {
	o := Outcome{Scenario: s.Name}
	var beside []string
	for _, f := range fs {
		alarm := f.Severity == model.Critical || f.Severity == model.Warning
		mine := f.Direction == s.Direction || f.Direction == ""
		// The verdict names the limits (primary) and every warning or
		// critical finding beside them: what the path or the hosts cost
		// the transfer.
		if mine && (f.Primary || alarm) {
			o.Verdict = append(o.Verdict, f.ID)
			o.Detail += fmt.Sprintf("[%s] %s ", f.ID, f.Summary)
		} else if mine {
			beside = append(beside, f.ID)
		}
		if alarm {
			o.Alarms = append(o.Alarms, f.ID)
		}
	}
	for _, d := range run.Summary {
		if d.Direction == s.Direction {
			o.Goodput, o.Loss = d.Goodput, d.LossRate
		}
	}
	o.Heavy = diagnose.Heavy(run, s.Direction)
	if s.Healthy {
		alarms := o.Alarms
		if o.Heavy && (slices.Contains(o.Alarms, "lossy-path") || slices.Contains(o.Alarms, "rto-stalls")) {
			// The loss finding the no-silent-loss rule requires (and
			// the timeouts the loss caused), and the bottleneck's
			// verdict raised to their severity.
			alarms = slices.DeleteFunc(slices.Clone(alarms), func(id string) bool { return lossNotes[id] || id == "bottleneck" })
			o.LossNoted = true
		}
		// What the path's physics makes true of a healthy path (a test
		// too short for the window to regrow: still-growing) is no
		// false alarm either; nor is a verdict that the transfer fell
		// short of the path, where it did: the judge knows the rate it
		// drew, and a transfer under shortfall of it did not fill the
		// path, whatever a bottleneck verdict would say.
		accepted := func(id string) bool {
			return slices.Contains(s.Also, id) || shortfalls[id] && fellShort(s, o.Goodput)
		}
		alarms = slices.DeleteFunc(slices.Clone(alarms), accepted)
		o.OK = len(alarms) == 0 && len(o.Verdict) > 0
		for _, v := range o.Verdict {
			o.OK = o.OK && (slices.Contains(healthyVerdicts, v) || o.LossNoted && lossNotes[v] || accepted(v))
		}
		return o
	}
	for _, want := range append([]string{s.Want}, s.Also...) {
		if slices.Contains(o.Verdict, want) || s.Beside && slices.Contains(beside, want) {
			o.OK = true
		}
	}
	return o
}

// Run runs each scenario repeat times, round by round (so a slow moment
// of the machine spreads over the scenarios), and judges every run.
// progress, if not nil, hears each outcome.
func Run(ctx context.Context, scenarios []Scenario, repeat int, progress func(Outcome)) []Outcome {
	var out []Outcome
	for range repeat {
		for _, s := range scenarios {
			if ctx.Err() != nil {
				return out
			}
			o := runOne(ctx, s)
			out = append(out, o)
			if progress != nil {
				progress(o)
			}
		}
	}
	return out
}

// measured is the time a run measures, slow start omitted (testLength).
const measured = 4 * time.Second

// testLength is a run's duration and omitted start: ten round trips of
// slow start left out (at least 1 s), then 4 s measured.
func testLength(s Scenario) (time.Duration, time.Duration) {
	rtt := s.AtoB.Delay + s.BtoA.Delay
	omit := max(time.Second, 10*rtt)
	return omit + measured, omit
}

func runOne(ctx context.Context, s Scenario) Outcome {
	cfg := s.Test
	cfg.Duration, cfg.Omit = testLength(s)
	var run *model.Run
	var err error
	if s.Loopback {
		run, err = loopback(ctx, cfg)
	} else {
		run, err = inLab(ctx, s, cfg)
	}
	if run == nil || len(run.Summary) == 0 {
		if err == nil {
			err = errors.New("no result")
		}
		return Outcome{Scenario: s.Name, Err: err}
	}
	// A broken path may end the test early; its diagnosis must still say
	// why, so the run is judged all the same.
	fs := diagnose.Test(run, diagnose.Options{})
	o := Judge(s, run, fs)
	o.FixProblems = diagnose.FixProblems(run, fs)
	o.SilentLoss = silentLoss(s, run, fs)
	o.OK = o.OK && len(o.FixProblems) == 0 && !o.SilentLoss
	o.Run = run
	return o
}

// heavyWords says what diagnose.Heavy asks, for the tables.
var heavyWords = fmt.Sprintf("%.0f%% of the bytes retransmitted, or %.0f%% of a stream's life in timeouts", 100*diagnose.HeavyLoss, 100*diagnose.HeavyRTOShare)

// lossFindings name a direction's loss.
var lossFindings = map[string]bool{"lossy-path": true, "loss-limited": true, "policer": true, "rto-stalls": true, "pmtu-blackhole": true}

// silentLoss reports the scenario's direction losing heavily
// (diagnose.Heavy) with no finding of warning severity or more that
// names the loss.
func silentLoss(s Scenario, run *model.Run, fs []model.Finding) bool {
	if !diagnose.Heavy(run, s.Direction) {
		return false
	}
	return !slices.ContainsFunc(fs, func(f model.Finding) bool {
		return f.Direction == s.Direction && lossFindings[f.ID] && f.Severity != model.Info
	})
}

// inLab builds the scenario's pair, serves in B and tests from A.
func inLab(ctx context.Context, s Scenario, cfg model.TestConfig) (*model.Run, error) {
	backend := s.Backend
	if backend == lab.Auto {
		backend = lab.UseEmulator
	}
	p, err := lab.NewPair(ctx, lab.PairConfig{MTU: s.MTU, A: s.A, B: s.B, Backend: backend, Middlebox: s.Middlebox,
		Emulated: &emulator.Config{AtoB: s.AtoB, BtoA: s.BtoA, Seed: s.Seed}})
	if err != nil {
		return nil, fmt.Errorf("%s: build the lab: %w", s.Name, err)
	}
	defer p.Close()
	addr, stop, err := experiment.Serve(ctx, p, 0, "precision")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer stop()
	var run *model.Run
	err = p.A.Do(func() error {
		var err error
		run, err = (&perf.Client{Version: "precision"}).Run(ctx, addr, cfg)
		return err
	})
	return run, err
}

// loopback serves on 127.0.0.1 in this host and tests across it.
func loopback(ctx context.Context, cfg model.TestConfig) (*model.Run, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("loopback: %w", err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		perf.Add(&serve.Server{Version: "precision"}).Serve(sctx, ln)
	}()
	defer func() { cancel(); <-done }()
	return (&perf.Client{Version: "precision"}).Run(ctx, ln.Addr().String(), cfg)
}

// Tally is one scenario's outcomes.
type Tally struct {
	Runs, OK, Errors int
	// LossNoted counts the runs of a healthy path whose loss was heavy
	// (diagnose.Heavy) and carry the loss finding it requires.
	LossNoted int
	Verdicts  map[string]int // verdict (joined) → runs
	Alarms    map[string]int
}

// Count tallies outcomes per scenario.
func Count(out []Outcome) map[string]*Tally {
	m := map[string]*Tally{}
	for _, o := range out {
		t := m[o.Scenario]
		if t == nil {
			t = &Tally{Verdicts: map[string]int{}, Alarms: map[string]int{}}
			m[o.Scenario] = t
		}
		if o.Err != nil {
			t.Errors++
			continue
		}
		t.Runs++
		if o.OK {
			t.OK++
		}
		if o.LossNoted {
			t.LossNoted++
		}
		v := strings.Join(o.Verdict, " + ")
		if v == "" {
			v = "none"
		}
		t.Verdicts[v]++
		for _, a := range o.Alarms {
			t.Alarms[a]++
		}
	}
	return m
}

// Table writes a suite's tally as Markdown: per scenario the verdicts
// seen, the runs that were right, and for the healthy suite the alarms;
// then the totals.
func Table(w io.Writer, scenarios []Scenario, out []Outcome) {
	m := Count(out)
	healthy := len(scenarios) > 0 && scenarios[0].Healthy
	if healthy {
		fmt.Fprintln(w, "| path | verdicts (runs) | warning or critical findings | right |")
	} else {
		fmt.Fprintln(w, "| impairment | wanted | verdicts (runs) | hits |")
	}
	fmt.Fprintln(w, "|---|---|---|---|")
	runs, ok, errs, noted := 0, 0, 0, 0
	var known []Scenario
	for _, s := range scenarios {
		t := m[s.Name]
		if t == nil {
			continue
		}
		runs, ok, errs, noted = runs+t.Runs, ok+t.OK, errs+t.Errors, noted+t.LossNoted
		cell := fmt.Sprintf("%d/%d", t.OK, t.Runs)
		if t.Errors > 0 {
			cell += fmt.Sprintf(" (%d runs failed to run)", t.Errors)
		}
		want := s.Want
		if len(s.Also) > 0 {
			want += " (or " + strings.Join(s.Also, ", ") + ")"
		}
		if s.Known != "" && t.OK < t.Runs {
			cell += " (known)"
			known = append(known, s)
		}
		if healthy {
			// An application's own -b limit is in this suite too: its
			// verdict is in the verdicts column like any other.
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", s.Name, counts(t.Verdicts), orNone(counts(t.Alarms)), cell)
		} else {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", s.Name, want, counts(t.Verdicts), cell)
		}
	}
	if healthy {
		fmt.Fprintf(w, "\nFalse alarms: %d of %d runs.\n", runs-ok, runs)
		if noted > 0 {
			fmt.Fprintf(w, "%d runs lost heavily (%s) and carry the loss warning that requires (lossy-path or rto-stalls, saying what it cost); they are right, and listed among the warnings above.\n", noted, heavyWords)
		}
	} else {
		fmt.Fprintf(w, "\nHit rate: %d of %d runs (%.0f%%).\n", ok, runs, 100*float64(ok)/float64(max(runs, 1)))
	}
	if errs > 0 {
		fmt.Fprintf(w, "%d runs could not be made and are not counted.\n", errs)
	}
	if len(known) > 0 {
		fmt.Fprintln(w, "\nKnown misses, and why:")
		for _, s := range known {
			fmt.Fprintf(w, "\n- %s: %s.\n", s.Name, s.Known)
		}
	}
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s (%d)", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// RandomTable writes the random suite's outcomes as Markdown: the hit
// rate per cause, the false alarms on healthy paths, then every run
// judged wrong with its name (seed, index and what was drawn), its
// verdict and the detail to tell why.
func RandomTable(w io.Writer, scenarios []Scenario, out []Outcome) {
	byName := map[string]Scenario{}
	for _, s := range scenarios {
		byName[s.Name] = s
	}
	type tally struct{ runs, ok, noted, errs int }
	heavy, silent := 0, 0
	per := map[string]*tally{}
	var kinds []string
	var wrong []Outcome
	for _, o := range out {
		s := byName[o.Scenario]
		kind := s.Want
		if s.Healthy {
			kind = "healthy"
		}
		t := per[kind]
		if t == nil {
			t = &tally{}
			per[kind] = t
			kinds = append(kinds, kind)
		}
		switch {
		case o.Err != nil:
			t.errs++
			continue
		case o.OK:
			t.ok++
		default:
			wrong = append(wrong, o)
		}
		t.runs++
		if o.LossNoted && o.OK {
			t.noted++
		}
		if o.Heavy {
			heavy++
		}
		if o.SilentLoss {
			silent++
		}
	}
	slices.Sort(kinds)
	fmt.Fprintln(w, "| cause | runs | right | rate |")
	fmt.Fprintln(w, "|---|---|---|---|")
	var hits, imp, healthyRuns, healthyOK, noted, errs int
	for _, k := range kinds {
		t := per[k]
		fmt.Fprintf(w, "| %s | %d | %d | %.0f%% |\n", k, t.runs, t.ok, 100*float64(t.ok)/float64(max(t.runs, 1)))
		errs += t.errs
		if k == "healthy" {
			healthyRuns, healthyOK, noted = t.runs, t.ok, t.noted
			continue
		}
		hits, imp = hits+t.ok, imp+t.runs
	}
	fmt.Fprintln(w)
	if imp > 0 {
		fmt.Fprintf(w, "Hit rate: %d of %d impairment runs (%.1f%%). ", hits, imp, 100*float64(hits)/float64(imp))
	}
	fmt.Fprintf(w, "False alarms: %d of %d healthy runs", healthyRuns-healthyOK, healthyRuns)
	if noted > 0 {
		fmt.Fprintf(w, " (%d of the right ones lost heavily, %s, and carry the loss warning that requires)", noted, heavyWords)
	}
	fmt.Fprintln(w, ".")
	fmt.Fprintf(w, "Runs that lost heavily (%s): %d; without a loss finding of warning severity: %d.\n", heavyWords, heavy, silent)
	if errs > 0 {
		fmt.Fprintf(w, "%d runs could not be made and are not counted:\n", errs)
		for _, o := range out {
			if o.Err != nil {
				fmt.Fprintf(w, "\n- %s.\n", o.Err)
			}
		}
	}
	if len(wrong) > 0 {
		fmt.Fprintln(w, "\nEvery run judged wrong:")
		for _, o := range wrong {
			line := fmt.Sprintf("%s: verdict %s, goodput %v", o.Scenario, orNone(strings.Join(o.Verdict, " + ")), o.Goodput)
			if len(o.FixProblems) > 0 {
				line += "; fixes: " + strings.Join(o.FixProblems, "; ")
			}
			if o.SilentLoss {
				line += "; its heavy loss went unnamed"
			}
			fmt.Fprintf(w, "\n- %s.\n", line)
		}
	}
}
