package cli

import (
	"context"
	"io"
	"os"

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
		return watch.Show{Frame: frameView(out, f.jsonStream, terminalWidth(stdout))}
	}
	l := &report.WatchList{Out: out, TTY: isTerminal(stdout), Refresh: f.refresh, Interval: f.interval, Filter: cfg.Filter, Prime: f.count != 1,
		All: f.all, Width: terminalWidth(stdout)}
	return watch.Show{List: l.Write}
}

// frameView writes frames as JSON lines, or as a followed connection's
// lines within width (not JSON: only a followed connection's frames come
// here).
func frameView(out io.Writer, asJSON bool, width int) func(watch.Frame) error {
	if asJSON {
		return watch.NewRecorder(out).Write
	}
	return (&report.WatchFollow{Out: out, Width: width}).Write
}

// runScope runs the terminal view: the picker over the filter's
// connections, each chosen one followed by a session of its own, or with
// --conn the busiest match followed first. Its first sample is taken
// before the view opens: a filter matching nothing is said on the
// terminal, and the view opens naming the connection picked. The
// sessions share one sock_diag source: the view calls them one at a time.
func (f *watchFlags) runScope(ctx context.Context, src watch.Source, cfg watch.Config, stdout io.Writer) error {
	shared := src
	listCfg := cfg
	listCfg.Follow, listCfg.Record = false, nil
	lists := watch.NewSession(shared, listCfg)
	followCfg := cfg
	followCfg.Follow = true
	sources := scope.Sources{
		List: lists.NextList,
		Follow: func(r watch.ListRow) scope.Source {
			s := watch.NewSession(shared, followCfg)
			s.Start(r.Identity())
			return func() (watch.Frame, error) { return s.Next(ctx) }
		},
	}
	opt := scope.Options{Interval: cfg.Interval, Refresh: f.refresh, All: f.all, Filter: cfg.Filter}
	if cfg.Follow {
		s := watch.NewSession(shared, cfg)
		first, err := s.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		pending := &first
		sources.Frames = func() (watch.Frame, error) {
			if pending != nil {
				fr := *pending
				pending = nil
				return fr, nil
			}
			return s.Next(ctx)
		}
		opt.Note = s.Picked()
	}
	_, err := scope.Run(os.Stdin, stdout, sources, opt)
	return err
}
