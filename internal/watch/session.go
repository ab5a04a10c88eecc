package watch

import (
	"context"
	"time"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/pace"
)

// DiagEvery is how often a followed connection's running diagnosis is
// recomputed: it reads seconds of history, and twice a second follows any
// change.
const DiagEvery = 500 * time.Millisecond

// DiagWindow is how much of a followed connection's recent history the
// running diagnosis reads: long enough for the chrono counters and loss to
// mean something, short enough to follow a change.
const DiagWindow = 10 * time.Second

// Source reads the sockets a session watches: the kernel's, through the
// filter the command line gave (sockdiag, wired in by the cli), or a
// script in tests. Each socket's sample is stamped with the at it was
// read for.
type Source interface {
	// Dump reads the sockets the filter matches.
	Dump(at time.Duration) ([]model.Socket, error)
	// List reads the same as connection-list rows, their SocketBrief
	// filled in: a quarter of a full sample's size, for a text list.
	List(at time.Duration) ([]ListRow, error)
	// Get reads one socket again, by its identity; false once it is gone.
	Get(s model.Socket, at time.Duration) (model.Socket, bool, error)
}

// Clock is a session's time: the wall clock and a pace.Ticker unless a
// test gives one that moves only when waited on.
type Clock interface {
	// Since is the time since the session began.
	Since() time.Duration
	// Sleep waits d, or until ctx is done (then with its error).
	Sleep(ctx context.Context, d time.Duration) error
	// NewTicker ticks every period from now; its Wait returns ctx's
	// error once ctx is done.
	NewTicker(ctx context.Context, period time.Duration) (Ticker, error)
}

// Ticker is a Clock's ticker (a *pace.Ticker on the wall clock).
type Ticker interface {
	Wait() error
	Stop()
}

// Config is what a session does.
type Config struct {
	// Interval is the sampling period.
	Interval time.Duration
	// Count stops the session after this many samples (0: until its
	// context ends, or the followed connection closes for good).
	Count int
	// Follow keeps to one connection the filter matches (watch --conn):
	// the busiest, then, when it closes, the busiest other still busy.
	Follow bool
	// Filter is the filter's text, for the notes and errors.
	Filter string
	// Diagnose are the running diagnosis's options (Follow only).
	Diagnose diagnose.Options
	// Record, if set, gets every frame sampled.
	Record *Recorder
	// Notify, if set, is told which connection is followed when the
	// filter matched several, and when another takes a closed one's
	// place.
	Notify func(string)
	// Clock is the session's time; nil is the wall clock.
	Clock Clock
}

// Show is where a session's samples go.
type Show struct {
	// Frame shows full frames: every sample when following, and a
	// listing's when List is nil.
	Frame func(Frame) error
	// List, if set, shows a listing's samples as connection lists. Without
	// a recording the session then reads only the list rows (Source.List),
	// which are smaller and faster to read.
	List func(List) error
}

// Session is the oscilloscope's sampling loop over a Source: it lists
// the filter's connections, or follows one of them, every Interval, with
// rates and (following) the running diagnosis, until Count samples, the
// end of its context, or the end of the followed connection.
type Session struct {
	src     Source
	cfg     Config
	clock   Clock
	tracker Tracker
	running Running
	lister  Lister

	// Following: the connection followed, as first seen, and the note
	// naming it among the filter's matches.
	cur    *model.Socket
	picked string
	// pinned: the connection was given (Start), not picked among the
	// filter's matches, so none takes its place when it closes.
	pinned bool
	// looked: the last sample came after a look at the matches (Run
	// restarts its ticker).
	looked bool
}

// NewSession starts a session's clock.
func NewSession(src Source, cfg Config) *Session {
	s := &Session{src: src, cfg: cfg, clock: cfg.Clock}
	if s.clock == nil {
		s.clock = wallClock{start: time.Now()}
	}
	if cfg.Follow {
		s.tracker.Window = DiagWindow
		s.running = Running{Options: cfg.Diagnose, Every: DiagEvery}
	}
	return s
}

// Picked is the note naming the followed connection among the several
// the filter matched; empty when it matched one (or before the first
// sample).
func (s *Session) Picked() string { return s.picked }

// Start makes a following session follow sock, a connection the user
// chose (the terminal view's picker), from its first sample: no look for
// the busiest match first, and when it closes the session reports it
// closed rather than follow another.
func (s *Session) Start(sock model.Socket) {
	s.cur, s.pinned, s.picked = &sock, true, ""
}

// NextList takes one sample of the filter's connections as a connection
// list, as a listing session shows them (the terminal view's picker).
func (s *Session) NextList() (List, error) {
	at := s.clock.Since()
	rows, err := s.src.List(at)
	if err != nil {
		return List{}, err
	}
	return s.lister.Add(at, rows), nil
}

// Next takes one sample: a frame of the filter's connections, or of the
// followed one with its running diagnosis. Following, the first call
// picks the connection (NoMatchError when there is none), and a frame
// with no rows means it closed and no other match is busy.
func (s *Session) Next(ctx context.Context) (Frame, error) {
	var at time.Duration
	var socks []model.Socket
	var err error
	if s.cfg.Follow {
		at, socks, err = s.follow(ctx)
	} else {
		at = s.clock.Since()
		socks, err = s.src.Dump(at)
	}
	if err != nil {
		return Frame{}, err
	}
	fr := s.tracker.Add(at, socks)
	if s.cfg.Follow {
		s.running.Attach(&s.tracker, &fr)
	}
	if s.cfg.Record != nil {
		if err := s.cfg.Record.Write(fr); err != nil {
			return fr, err
		}
	}
	return fr, nil
}

// Run samples every Interval and shows each sample, until Count samples,
// ctx's end, or, following, the frame that says the connection closed.
// An ended context is not an error.
func (s *Session) Run(ctx context.Context, show Show) error {
	var tick Ticker
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	for n := 0; s.cfg.Count == 0 || n < s.cfg.Count; n++ {
		if n > 0 {
			if tick == nil {
				// The ticker starts after the first sample, and
				// again after a look at the matches: ticking through
				// a look (a quarter second) it would tick at once,
				// the next sample a millisecond after the look's and
				// its rate over next to nothing.
				var err error
				if tick, err = s.clock.NewTicker(ctx, s.cfg.Interval); err != nil {
					return err
				}
			}
			if err := tick.Wait(); err != nil {
				return ended(ctx, err)
			}
		}
		done, err := s.step(ctx, show)
		if done || err != nil {
			return err
		}
		if s.looked && tick != nil {
			tick.Stop()
			tick = nil
		}
		s.looked = false
	}
	return nil
}

// step takes and shows one sample; done when the session is over.
func (s *Session) step(ctx context.Context, show Show) (done bool, err error) {
	if show.List != nil && !s.cfg.Follow && s.cfg.Record == nil {
		at := s.clock.Since()
		rows, err := s.src.List(at)
		if err != nil {
			return true, ended(ctx, err)
		}
		return false, show.List(s.lister.Add(at, rows))
	}
	fr, err := s.Next(ctx)
	switch {
	case err != nil:
		return true, ended(ctx, err)
	case s.cfg.Follow:
		return len(fr.Rows) == 0, show.Frame(fr)
	case show.List != nil:
		return false, show.List(fr.List())
	}
	return false, show.Frame(fr)
}

// ended is err, or nothing when it came of ctx's end (interrupted).
func ended(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// wallClock is the Clock of a live session.
type wallClock struct{ start time.Time }

func (c wallClock) Since() time.Duration { return time.Since(c.start) }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

func (wallClock) NewTicker(ctx context.Context, period time.Duration) (Ticker, error) {
	return pace.NewTicker(ctx, period)
}
