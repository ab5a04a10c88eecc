package watch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// lookFor is how long a following session looks at the connections its
// filter matches, when there are several, before it follows the busiest:
// long enough for rates to tell a transfer from its idle control
// connection.
const lookFor = 250 * time.Millisecond

// busyShare: when the followed connection closes, another match is still
// busy, and followed next, when it moves at least this share of what the
// closed one moved over its last second. iperf3's control connection
// exchanging the results at the end of a test is not busy; the other
// streams of a -P test are.
const busyShare = 0.1

// NoMatchError is a following session's first sample finding no open
// connection its filter matches.
type NoMatchError struct{ Filter string }

func (e *NoMatchError) Error() string { return fmt.Sprintf("no connection matches %q", e.Filter) }

// follow samples the followed connection; none when it closed and no
// other match is busy. The first call picks the connection to follow.
func (s *Session) follow(ctx context.Context) (time.Duration, []model.Socket, error) {
	if s.cur == nil {
		return s.pick(ctx)
	}
	at := s.clock.Since()
	// One connection: look it up directly rather than dump them all (the
	// cost then does not grow with the host's).
	sk, ok, err := s.src.Get(*s.cur, at)
	if err != nil {
		return at, nil, err
	}
	if ok && open(&sk) {
		return at, []model.Socket{sk}, nil
	}
	if s.pinned {
		return at, nil, nil
	}
	return s.takeOver(ctx, at)
}

// pick chooses the connection to follow: the busiest match.
func (s *Session) pick(ctx context.Context) (time.Duration, []model.Socket, error) {
	rows, err := s.look(ctx, 0)
	if err != nil {
		return 0, nil, err
	}
	if len(rows) == 0 {
		return 0, nil, &NoMatchError{Filter: s.cfg.Filter}
	}
	s.cur = &rows[0].Socket
	if len(rows) > 1 {
		s.picked = pickedNote(s.cfg.Filter, rows)
		s.say(s.picked)
	}
	return s.cur.TCP.At, []model.Socket{*s.cur}, nil
}

// takeOver is the sample after the followed connection closed: another
// match still busy is followed next, and the frame then lists the closed
// one closed and that one new; otherwise the frame is empty.
func (s *Session) takeOver(ctx context.Context, at time.Duration) (time.Duration, []model.Socket, error) {
	was, known := s.tracker.Goodput(s.cur.Cookie, time.Second)
	rows, err := s.look(ctx, s.cur.Cookie)
	if err != nil {
		return at, nil, err
	}
	if len(rows) == 0 || rows[0].New || rows[0].Rate == 0 || known && float64(rows[0].Rate) < busyShare*float64(was) {
		return at, nil, nil
	}
	old := s.cur
	s.cur = &rows[0].Socket
	s.say(fmt.Sprintf("%s → %s closed; following %s → %s, the busiest other connection %q matches (%s)",
		old.Local, old.Remote, s.cur.Local, s.cur.Remote, s.cfg.Filter, rateNote(&rows[0])))
	return s.cur.TCP.At, []model.Socket{*s.cur}, nil
}

func (s *Session) say(note string) {
	if s.cfg.Notify != nil {
		s.cfg.Notify(note)
	}
}

// look finds the open connections the filter matches, but skip, busiest
// first (Busiest). Several, or any when looking for another to follow,
// are dumped twice, lookFor apart, for their rates.
func (s *Session) look(ctx context.Context, skip uint64) ([]Row, error) {
	s.looked = true
	dump := func() (time.Duration, []model.Socket, error) {
		at := s.clock.Since()
		socks, err := s.src.Dump(at)
		return at, slices.DeleteFunc(socks, func(k model.Socket) bool { return k.Cookie == skip || !open(&k) }), err
	}
	var t Tracker
	at, socks, err := dump()
	if err != nil {
		return nil, err
	}
	fr := t.Add(at, socks)
	if len(socks) == 0 || len(socks) == 1 && skip == 0 {
		return fr.Rows, nil
	}
	if err := s.clock.Sleep(ctx, lookFor); err != nil {
		return nil, err
	}
	if at, socks, err = dump(); err != nil {
		return nil, err
	}
	return Busiest(t.Add(at, socks).Rows), nil
}

// open reports a socket that is not what a closed connection leaves.
func open(s *model.Socket) bool {
	return s.TCP.State != model.TCPTimeWait && s.TCP.State != model.TCPClose
}

// pickedNote names the connection followed among several matches, the
// others, and how to follow one of them instead.
func pickedNote(filter string, rows []Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d connections match %q; following the busiest, %s → %s (%s); also ", len(rows), filter,
		rows[0].Local, rows[0].Remote, rateNote(&rows[0]))
	for i := range rows[1:] {
		r := &rows[1+i]
		if i == 4 {
			fmt.Fprintf(&b, ", and %d more", len(rows)-1-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s → %s (%s)", r.Local, r.Remote, rateNote(r))
	}
	o := &rows[1]
	fmt.Fprintf(&b, ". To follow another, narrow the filter, e.g. --conn \"sport %d dport %d\"", o.Local.Port(), o.Remote.Port())
	return b.String()
}

// rateNote is a look's rate of a connection: measured, or not yet (it
// opened during the look).
func rateNote(r *Row) string {
	switch {
	case r.New:
		return "opened just now"
	case r.Rate == 0:
		return "idle"
	case r.Sending:
		return r.Rate.String() + " sent"
	}
	return r.Rate.String() + " received"
}
