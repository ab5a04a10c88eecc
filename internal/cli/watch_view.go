package cli

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/tcpscope/tcpscope/internal/pace"
	"github.com/tcpscope/tcpscope/internal/report"
	"github.com/tcpscope/tcpscope/internal/scope"
	"github.com/tcpscope/tcpscope/internal/watch"
)

// show is where the samples go: JSON lines, the followed lines, or the
// connection list.
func (f *watchFlags) show(cfg watch.Config, stdout io.Writer) watch.Show {
	out := pace.Output(stdout)
	if f.jsonStream || cfg.Follow {
		return watch.Show{Frame: frameView(out, f.jsonStream)}
	}
	l := &report.WatchList{Out: out, TTY: isTerminal(stdout), Refresh: f.refresh, Interval: f.interval, Filter: cfg.Filter, Prime: f.count != 1,
		All: f.all}
	return watch.Show{List: l.Write}
}

// frameView writes frames as JSON lines, or as a followed connection's
// lines (not JSON: only a followed connection's frames come here).
func frameView(out io.Writer, asJSON bool) func(watch.Frame) error {
	if asJSON {
		return watch.NewRecorder(out).Write
	}
	return (&report.WatchFollow{Out: out}).Write
}

// runScope shows a following session in the terminal view. Its first
// sample is taken first: a filter matching nothing is said on the
// terminal, and the view opens naming the connection picked.
func runScope(ctx context.Context, s *watch.Session, stdout io.Writer, interval time.Duration) error {
	first, err := s.Next(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	pending := &first
	_, err = scope.Run(os.Stdin, stdout, func() (watch.Frame, error) {
		if pending != nil {
			fr := *pending
			pending = nil
			return fr, nil
		}
		return s.Next(ctx)
	}, interval, s.Picked())
	return err
}
