package watch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// The session's seams are its Source and its Clock. These tests give it
// a scripted host (connections that open, move bytes at set rates and
// close, lingering in TIME-WAIT as the kernel keeps them) and a clock
// that moves only when the session waits, so every rate, note and choice
// is exact. The real sockets are the cli's tests (watch_follow_test.go).

// scriptConn is one scripted connection: open from from until until (0:
// for ever), acknowledging rate bytes a second.
type scriptConn struct {
	cookie        uint64
	local, remote netip.AddrPort
	from, until   time.Duration
	rate          model.Bytes
	// lingers keeps the connection listed after it closes, in
	// TIME-WAIT, as the kernel does.
	lingers bool
}

// at is the connection as sock_diag would report it at at.
func (c *scriptConn) at(at time.Duration) (model.Socket, bool) {
	if at < c.from {
		return model.Socket{}, false
	}
	state, end := model.TCPEstablished, at
	if c.until > 0 && at >= c.until {
		if !c.lingers {
			return model.Socket{}, false
		}
		state, end = model.TCPTimeWait, c.until
	}
	acked := c.rate * model.Bytes(end-c.from) / model.Bytes(time.Second)
	return model.Socket{Cookie: c.cookie, Local: c.local, Remote: c.remote, TCP: model.Sample{
		At: at, State: state, BytesAcked: model.Some(acked), BytesReceived: model.Some[model.Bytes](0)}}, true
}

// script is a scripted Source.
type script struct {
	conns              []*scriptConn
	dumps, lists, gets int
	err                error // every read's, once set
}

func (s *script) Dump(at time.Duration) ([]model.Socket, error) {
	s.dumps++
	if s.err != nil {
		return nil, s.err
	}
	var out []model.Socket
	for _, c := range s.conns {
		if k, ok := c.at(at); ok {
			out = append(out, k)
		}
	}
	return out, nil
}

func (s *script) List(at time.Duration) ([]ListRow, error) {
	s.lists++
	s.dumps-- // counted as a list, not a dump
	socks, err := s.Dump(at)
	rows := make([]ListRow, len(socks))
	for i := range socks {
		rows[i].SocketBrief = socks[i].Brief()
	}
	return rows, err
}

func (s *script) Get(k model.Socket, at time.Duration) (model.Socket, bool, error) {
	s.gets++
	if s.err != nil {
		return model.Socket{}, false, s.err
	}
	for _, c := range s.conns {
		if c.cookie == k.Cookie {
			g, ok := c.at(at)
			return g, ok, nil
		}
	}
	return model.Socket{}, false, nil
}

// stepClock moves only when the session sleeps or waits for a tick.
type stepClock struct{ now time.Duration }

func (c *stepClock) Since() time.Duration { return c.now }

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.now += d
	return nil
}

func (c *stepClock) NewTicker(ctx context.Context, period time.Duration) (Ticker, error) {
	return &stepTicker{c: c, ctx: ctx, period: period, next: c.now + period}, nil
}

// stepTicker ticks every period from its making, as a time.Ticker does:
// a tick that came while the session was busy is waiting, and Wait
// returns at once (later ones missed meanwhile are dropped).
type stepTicker struct {
	c      *stepClock
	ctx    context.Context
	period time.Duration
	next   time.Duration // the next tick
}

func (t *stepTicker) Wait() error {
	if err := t.ctx.Err(); err != nil {
		return err
	}
	if t.c.now < t.next {
		t.c.now = t.next
	}
	for t.next <= t.c.now {
		t.next += t.period
	}
	return nil
}

func (t *stepTicker) Stop() {}

func addr(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// iperf3ish is a stock iperf3 test's two connections as its client sees
// them: the control connection, idle, and the data connection, moving 10
// MB/s (80 Mbit/s) until dataEnds (0: for ever).
func iperf3ish(dataEnds time.Duration) (control, data *scriptConn) {
	control = &scriptConn{cookie: 1, local: addr("127.0.0.1:40000"), remote: addr("127.0.0.1:5201")}
	data = &scriptConn{cookie: 2, local: addr("127.0.0.1:40002"), remote: addr("127.0.0.1:5201"),
		rate: 10_000_000, until: dataEnds, lingers: true}
	return control, data
}

// run runs a session to its end and returns its frames and notes.
func run(t *testing.T, src Source, cfg Config) ([]Frame, []string) {
	t.Helper()
	var frames []Frame
	var notes []string
	cfg.Notify = func(s string) { notes = append(notes, s) }
	if cfg.Clock == nil {
		cfg.Clock = &stepClock{}
	}
	if cfg.Interval == 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	s := NewSession(src, cfg)
	err := s.Run(t.Context(), Show{Frame: func(f Frame) error { frames = append(frames, f); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return frames, notes
}

// Following a filter that matches iperf3's control and data connections
// picks the data connection after a quarter-second look, names the
// other and how to follow it, and keeps to the data connection.
func TestSessionFollowsTheBusiest(t *testing.T) {
	control, data := iperf3ish(0)
	src := &script{conns: []*scriptConn{control, data}}
	frames, notes := run(t, src, Config{Follow: true, Filter: "dport 5201", Count: 5})
	if len(frames) != 5 {
		t.Fatalf("%d frames, want 5", len(frames))
	}
	for i, f := range frames {
		if len(f.Rows) != 1 || f.Rows[0].Cookie != data.cookie || f.Rows[0].New != (i == 0) {
			t.Fatalf("frame %d: %+v", i, f.Rows)
		}
		// The look took a quarter second; then one sample a tick.
		if want := lookFor + time.Duration(i)*100*time.Millisecond; f.At != want {
			t.Errorf("frame %d at %v, want %v", i, f.At, want)
		}
		if i > 0 && (f.Rows[0].Rate != 80*model.MbitPerSecond || !f.Rows[0].Sending) {
			t.Errorf("frame %d: %v sending %v, want 80 Mbit/s sent", i, f.Rows[0].Rate, f.Rows[0].Sending)
		}
	}
	want := fmt.Sprintf(`2 connections match "dport 5201"; following the busiest, 127.0.0.1:40002 → 127.0.0.1:5201 (%s sent); `+
		`also 127.0.0.1:40000 → 127.0.0.1:5201 (idle). To follow another, narrow the filter, e.g. --conn "sport 40000 dport 5201"`,
		80*model.MbitPerSecond)
	if len(notes) != 1 || notes[0] != want {
		t.Errorf("notes %q\nwant %q", notes, want)
	}
	// One look (two dumps), then the followed connection alone.
	if src.dumps != 2 || src.gets != 4 {
		t.Errorf("%d dumps, %d gets; want 2 and 4", src.dumps, src.gets)
	}
}

// A filter matching one connection follows it at once, without a look or
// a note.
func TestSessionFollowsTheOnlyMatch(t *testing.T) {
	_, data := iperf3ish(0)
	s := NewSession(&script{conns: []*scriptConn{data}}, Config{Follow: true, Filter: "sport 40002", Clock: &stepClock{}})
	f, err := s.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if f.At != 0 || len(f.Rows) != 1 || f.Rows[0].Cookie != data.cookie || s.Picked() != "" {
		t.Errorf("frame at %v, rows %+v, note %q", f.At, f.Rows, s.Picked())
	}
}

// No open match is a NoMatchError: a closed connection the kernel still
// lists in TIME-WAIT is not one to follow.
func TestSessionNoMatch(t *testing.T) {
	gone := &scriptConn{cookie: 3, local: addr("127.0.0.1:40004"), remote: addr("127.0.0.1:5201"), until: time.Millisecond, lingers: true}
	for _, conns := range [][]*scriptConn{nil, {gone}} {
		s := NewSession(&script{conns: conns}, Config{Follow: true, Filter: "dport 5201", Clock: &stepClock{now: time.Second}})
		_, err := s.Next(t.Context())
		var nm *NoMatchError
		if !errors.As(err, &nm) || err.Error() != `no connection matches "dport 5201"` {
			t.Errorf("%d connections: error %v, want no match", len(conns), err)
		}
	}
}

// followTillClose follows a 10 MB/s transfer that ends at 1 s while
// another match moves other bytes a second. It returns the frames, the
// notes, and the other connection; the frames up to the close are
// checked here.
func followTillClose(t *testing.T, other model.Bytes) ([]Frame, []string, *scriptConn) {
	t.Helper()
	_, data := iperf3ish(time.Second)
	o := &scriptConn{cookie: 1, local: addr("127.0.0.1:40000"), remote: addr("127.0.0.1:5201"), rate: other}
	frames, notes := run(t, &script{conns: []*scriptConn{data, o}}, Config{Follow: true, Filter: "dport 5201", Count: 100})
	// The data connection is followed from 250 ms, a frame a tick while
	// it is open (until 950 ms); the next frame has it closed.
	const open = 8
	if len(frames) <= open {
		t.Fatalf("%d frames", len(frames))
	}
	for i, f := range frames[:open] {
		if len(f.Rows) != 1 || f.Rows[0].Cookie != data.cookie {
			t.Fatalf("frame %d: %+v", i, f.Rows)
		}
	}
	if f := frames[open]; len(f.Closed) != 1 || f.Closed[0].Cookie != data.cookie {
		t.Fatalf("frame after the close: closed %+v", f.Closed)
	}
	return frames[open:], notes, o
}

// When the followed connection closes (TIME-WAIT, then gone) and the
// other match moves less than busyShare of what it did over its last
// second, the session ends, with a frame that has the closed
// connection's last numbers: the end of an iperf3 test.
func TestSessionEndsWithTheTransfer(t *testing.T) {
	for _, other := range []model.Bytes{0, 500_000} {
		after, notes, _ := followTillClose(t, other)
		if len(after) != 1 || len(after[0].Rows) != 0 || len(notes) != 1 {
			t.Errorf("%d B/s beside: the session went on: %d frames after the close, rows %+v, notes %q", other, len(after), after[0].Rows, notes)
		}
	}
}

// When the followed connection closes and the other match moves at
// least busyShare of what it did, the session follows that one, says
// so, and goes on.
func TestSessionGoesOnWithABusyMatch(t *testing.T) {
	after, notes, other := followTillClose(t, 2_000_000) // a fifth
	if f := after[0]; len(f.Rows) != 1 || f.Rows[0].Cookie != other.cookie || !f.Rows[0].New || len(after) != 100-8 {
		t.Fatalf("%d frames after the close; the first: rows %+v", len(after), f.Rows)
	}
	want := fmt.Sprintf(`127.0.0.1:40002 → 127.0.0.1:5201 closed; following 127.0.0.1:40000 → 127.0.0.1:5201, `+
		`the busiest other connection "dport 5201" matches (%s sent)`, 16*model.MbitPerSecond)
	if len(notes) != 2 || notes[1] != want {
		t.Errorf("notes %q\nwant the pick, then %q", notes, want)
	}
	for i, f := range after[1:] {
		if len(f.Rows) != 1 || f.Rows[0].Cookie != other.cookie || len(f.Closed) != 0 {
			t.Fatalf("frame %d after the switch: %+v", i, f)
		}
	}
	// The switch's look took a quarter second; the next sample is a
	// tick after it, not the tick that came during it.
	if d := after[1].At - after[0].At; d != 100*time.Millisecond {
		t.Errorf("the sample after the switch came %v after it, want 100ms", d)
	}
}

// A text list reads list rows, not full samples, unless a recording
// needs them; JSON lists get full frames. Each way the session takes
// Count samples, a tick apart.
func TestSessionLists(t *testing.T) {
	control, data := iperf3ish(0)
	for _, c := range []struct {
		name          string
		text, record  bool
		dumps, lists  int
		wantRecording int
	}{
		{"text", true, false, 0, 3, 0},
		{"text and a recording", true, true, 3, 0, 3},
		{"JSON", false, false, 3, 0, 0},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			src := &script{conns: []*scriptConn{control, data}}
			var rec bytes.Buffer
			cfg := Config{Count: 3, Interval: time.Second, Clock: &stepClock{}}
			if c.record {
				cfg.Record = NewRecorder(&rec)
			}
			var lists []List
			show := Show{Frame: func(f Frame) error { lists = append(lists, f.List()); return nil }}
			if c.text {
				show = Show{List: func(l List) error { lists = append(lists, l); return nil }}
			}
			if err := NewSession(src, cfg).Run(t.Context(), show); err != nil {
				t.Fatal(err)
			}
			if src.dumps != c.dumps || src.lists != c.lists || src.gets != 0 {
				t.Errorf("%d dumps, %d lists, %d gets; want %d, %d, 0", src.dumps, src.lists, src.gets, c.dumps, c.lists)
			}
			if len(lists) != 3 {
				t.Fatalf("%d lists, want 3", len(lists))
			}
			for i, l := range lists {
				if l.At != time.Duration(i)*time.Second || len(l.Rows) != 2 {
					t.Fatalf("list %d at %v: %+v", i, l.At, l.Rows)
				}
				if i > 0 && (l.Rows[0].Cookie != data.cookie || l.Rows[0].Rate != 80*model.MbitPerSecond) {
					t.Errorf("list %d: first %+v", i, l.Rows[0])
				}
			}
			if n := strings.Count(rec.String(), "\n"); n != c.wantRecording {
				t.Errorf("%d frames recorded, want %d", n, c.wantRecording)
			}
		})
	}
}

// The recording of a followed connection replays to the frames the
// session showed: the same rows and the same running diagnosis.
func TestSessionRecordingReplays(t *testing.T) {
	_, data := iperf3ish(time.Second)
	var rec bytes.Buffer
	live, _ := run(t, &script{conns: []*scriptConn{data}}, Config{Follow: true, Filter: "sport 40002", Count: 30, Record: NewRecorder(&rec)})
	tr := &Tracker{Window: DiagWindow}
	running := &Running{Every: DiagEvery}
	var again []Frame
	err := Replay(bufio.NewReader(&rec), tr, func(f Frame) error {
		running.Attach(tr, &f)
		again = append(again, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(live) {
		t.Fatalf("%d frames replayed, %d live", len(again), len(live))
	}
	for i := range live {
		a, b := live[i], again[i]
		if a.At != b.At || len(a.Rows) != len(b.Rows) || len(a.Closed) != len(b.Closed) || len(a.Diagnosis) != len(b.Diagnosis) {
			t.Errorf("frame %d: live %+v, replayed %+v", i, a, b)
		}
		if open := i > 0 && i < len(live)-1; open != (len(a.Diagnosis) > 0) || open && a.Diagnosis[0].ID != b.Diagnosis[0].ID {
			t.Errorf("frame %d: diagnosis live %v, replayed %v", i, a.Diagnosis, b.Diagnosis)
		}
	}
}

// An interrupted session ends without an error, whether it is waiting
// for the next tick or in the quarter-second look; a failing source's
// error is the session's.
func TestSessionEnds(t *testing.T) {
	control, data := iperf3ish(0)
	ctx, cancel := context.WithCancel(t.Context())
	n := 0
	s := NewSession(&script{conns: []*scriptConn{control, data}}, Config{Interval: time.Second, Clock: &stepClock{}})
	err := s.Run(ctx, Show{Frame: func(Frame) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	}})
	if err != nil || n != 3 {
		t.Errorf("interrupted at a tick: %v after %d frames", err, n)
	}
	s = NewSession(&script{conns: []*scriptConn{control, data}}, Config{Follow: true, Interval: time.Second, Clock: &stepClock{}})
	if err := s.Run(ctx, Show{Frame: func(Frame) error { t.Error("a frame"); return nil }}); err != nil {
		t.Errorf("interrupted in the look: %v", err)
	}

	broken := errors.New("netlink: broken")
	src := &script{conns: []*scriptConn{data}}
	s = NewSession(src, Config{Follow: true, Interval: time.Second, Clock: &stepClock{}})
	n = 0
	err = s.Run(t.Context(), Show{Frame: func(Frame) error {
		if n++; n == 2 {
			src.err = broken
		}
		return nil
	}})
	if !errors.Is(err, broken) || n != 2 {
		t.Errorf("a source failing after 2 frames: %v after %d", err, n)
	}
	// So is the view's.
	full := errors.New("disk full")
	s = NewSession(&script{conns: []*scriptConn{data}}, Config{Interval: time.Second, Clock: &stepClock{}})
	if err := s.Run(t.Context(), Show{Frame: func(Frame) error { return full }}); !errors.Is(err, full) {
		t.Errorf("a view failing: %v", err)
	}
}
