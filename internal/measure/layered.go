package measure

import (
	"cmp"
	"context"
	"time"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/hostinfo"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/probe"
)

// Layered is the layered method of tcpscope diagnose: this host's
// configuration, the path's facts before any load, an instrumented test
// each way asked, and the findings of all three merged from the bottom
// layer up. The host is sized for the target over the path's measured
// round trip, and its buffers judged against the rate the tests
// measured.
type Layered struct {
	// Client runs the tests.
	Client *perf.Client
	// Duration, Parallel and Congestion shape each test (5 s, one
	// stream, the host's congestion control when zero); Reverse lists
	// the directions, in order (false: the client sends).
	Duration   time.Duration
	Parallel   int
	Congestion string
	Reverse    []bool
	// Target is the rate fixes are sized for (0: the path's).
	Target model.Bitrate
	// Progress, when set, hears each step as it completes.
	Progress func(Progress)
	// ReadHost and ProbePath stand for reading this host
	// (hostinfo.Reader) and probing the path (probe.Path, five
	// handshakes) when nil.
	ReadHost  func(context.Context) (model.HostInfo, error)
	ProbePath func(ctx context.Context, addr string) (model.PathFacts, error)
}

// Progress is a step of the method done: 1 the host, 2 the path, 3 a
// test (its run, and the limit of each direction it tested, or the
// error it broke off with).
type Progress struct {
	Step   int
	Report *diagnose.Report
	Run    *model.Run
	Limits []diagnose.DirectionLimit
	Err    error
}

// PathError is a failure to reach the server's address before any
// test: probe's dial error, for the caller to classify.
type PathError struct{ Err error }

func (e *PathError) Error() string { return "probe the path: " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }

// Run runs the method against addr (host:port). A test that breaks off
// still has a run, kept with its findings (a path-MTU black hole stalls
// every test, and that is its diagnosis), and the next test runs;
// testErr is the first such error, for the caller's exit code. err is
// set when the method could not go on: the host unread, the path
// unreachable (a *PathError), or a test that
// produced no run.
func (l *Layered) Run(ctx context.Context, addr string) (res *diagnose.Report, testErr, err error) {
	start := time.Now()
	res = &diagnose.Report{Schema: diagnose.ReportSchema}
	readHost := l.ReadHost
	if readHost == nil {
		readHost = hostinfo.Reader{}.Read
	}
	if res.Host, err = readHost(ctx); err != nil {
		return nil, nil, err
	}
	l.progress(Progress{Step: 1, Report: res})
	probePath := l.ProbePath
	if probePath == nil {
		probePath = func(ctx context.Context, addr string) (model.PathFacts, error) {
			return probe.Path(ctx, nil, "tcp", addr, 5)
		}
	}
	if res.Path, err = probePath(ctx, addr); err != nil {
		return nil, nil, &PathError{Err: err}
	}
	l.progress(Progress{Step: 2, Report: res})
	measured, testErr, err := l.tests(ctx, addr, res)
	if err != nil {
		return nil, nil, err
	}
	all := diagnose.Host(res.Host, diagnose.HostOptions{Target: l.Target, RTT: res.Path.RTTMin, Measured: measured})
	all = append(all, diagnose.Path(res.Path)...)
	for _, r := range res.Runs {
		all = append(all, r.Diagnosis...)
	}
	res.Findings = diagnose.ByLayer(diagnose.Merge(all))
	res.Took = time.Since(start)
	return res, testErr, nil
}

func (l *Layered) progress(p Progress) {
	if l.Progress != nil {
		l.Progress(p)
	}
}

// tests runs the instrumented tests into res and returns the best
// goodput measured, and the first error of a test that broke off.
func (l *Layered) tests(ctx context.Context, addr string, res *diagnose.Report) (measured model.Bitrate, testErr, err error) {
	d := cmp.Or(l.Duration, 5*time.Second)
	client := withWarnings(l.Client)
	for _, reverse := range l.Reverse {
		cfg := model.TestConfig{Duration: d, Parallel: max(l.Parallel, 1), Reverse: reverse, Omit: min(time.Second, d/4),
			Congestion: l.Congestion}
		// tcpscope's protocol only: the method reads both ends' kernels.
		run, err := client.Run(ctx, addr, cfg)
		if run == nil {
			return measured, testErr, err
		}
		if err != nil {
			testErr = cmp.Or(testErr, err)
			res.Errors = append(res.Errors, err.Error())
		}
		res.Runs = append(res.Runs, run)
		run.Diagnosis = diagnose.Test(run, diagnose.Options{Target: l.Target})
		lims := diagnose.Limits(run)
		res.Limits = append(res.Limits, lims...)
		for i := range lims {
			if g, ok := run.Summary[i].Goodput.Get(); ok {
				measured = max(measured, g)
			}
		}
		l.progress(Progress{Step: 3, Report: res, Run: run, Limits: lims, Err: err})
		if ctx.Err() != nil {
			break
		}
	}
	return measured, testErr, nil
}
