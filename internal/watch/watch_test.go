package watch

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

func sock(cookie uint64, at time.Duration, acked, received model.Bytes) model.Socket {
	return model.Socket{Cookie: cookie, TCP: model.Sample{At: at, BytesAcked: model.Some(acked), BytesReceived: model.Some(received)}}
}

func TestTrackerRatesOrderAndClose(t *testing.T) {
	var tr Tracker
	f := tr.Add(0, []model.Socket{sock(1, 0, 0, 0), sock(2, 0, 0, 0)})
	if len(f.Rows) != 2 || !f.Rows[0].New || f.Rows[0].Rate != 0 {
		t.Fatalf("first frame %+v", f)
	}
	// One second later: 1 sent 1 MB, 2 received 2 MB: 2 first.
	f = tr.Add(time.Second, []model.Socket{sock(1, time.Second, 1_000_000, 0), sock(2, time.Second, 0, 2_000_000)})
	if f.Rows[0].Cookie != 2 || f.Rows[0].Sending || f.Rows[0].Rate != 16*model.MbitPerSecond ||
		f.Rows[1].Cookie != 1 || !f.Rows[1].Sending || f.Rows[1].Rate != 8*model.MbitPerSecond {
		t.Errorf("second frame %+v", f.Rows)
	}
	f = tr.Add(2*time.Second, []model.Socket{sock(2, 2*time.Second, 0, 2_000_000)})
	if len(f.Closed) != 1 || f.Closed[0].Cookie != 1 || f.Rows[0].Rate != 0 {
		t.Errorf("third frame %+v", f)
	}
}

// A Lister gives a connection list the rates, order and closed
// connections a Tracker gives the same dumps.
func TestListerAgreesWithTracker(t *testing.T) {
	var tr Tracker
	var ls Lister
	r := rand.New(rand.NewPCG(3, 4))
	acked := map[uint64]model.Bytes{}
	for step := range 20 {
		at := time.Duration(step) * 100 * time.Millisecond
		var socks []model.Socket
		for c := uint64(1); c <= 30; c++ {
			if r.IntN(8) == 0 { // now and then a connection is missing
				continue
			}
			acked[c] += model.Bytes(r.IntN(3)) * 1000
			s := sock(c, at, acked[c], model.Bytes(r.IntN(2000)))
			s.TCP.TotalRetrans = uint32(step)
			socks = append(socks, s)
		}
		briefs := make([]ListRow, len(socks))
		for i, s := range socks {
			briefs[i].SocketBrief = model.SocketBrief{Cookie: s.Cookie, TCP: s.TCP.Brief()}
		}
		f, l := tr.Add(at, socks), ls.Add(at, briefs)
		if len(f.Rows) != len(l.Rows) || len(f.Closed) != len(l.Closed) {
			t.Fatalf("step %d: %d rows and %d closed, the list %d and %d", step, len(f.Rows), len(f.Closed), len(l.Rows), len(l.Closed))
		}
		for i, row := range f.Rows {
			lr := l.Rows[i]
			if lr.Cookie != row.Cookie || lr.Rate != row.Rate || lr.Sending != row.Sending || lr.Retrans != row.Retrans || lr.New != row.New {
				t.Errorf("step %d row %d: frame %d %v %v %d %v, list %d %v %v %d %v", step, i,
					row.Cookie, row.Rate, row.Sending, row.Retrans, row.New, lr.Cookie, lr.Rate, lr.Sending, lr.Retrans, lr.New)
			}
		}
	}
}

func TestRecordAndReplay(t *testing.T) {
	var buf bytes.Buffer
	rec := NewRecorder(&buf)
	var live Tracker
	var want []model.Bitrate
	for i := range 5 {
		at := time.Duration(i) * time.Second
		f := live.Add(at, []model.Socket{sock(7, at, model.Bytes(i)*125_000, 0)})
		want = append(want, f.Rows[0].Rate)
		if err := rec.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	var got []model.Bitrate
	err := Replay(&buf, &Tracker{Window: time.Minute}, func(f Frame) error {
		got = append(got, f.Rows[0].Rate)
		return nil
	})
	if err != nil || len(got) != 5 || got[4] != want[4] || got[4] != model.MbitPerSecond {
		t.Errorf("replayed %v, live %v, %v", got, want, err)
	}
	if err := Replay(strings.NewReader("not json\n"), &Tracker{}, func(Frame) error { return nil }); err == nil {
		t.Error("garbage replayed")
	}
	if err := Replay(strings.NewReader(""), &Tracker{}, func(Frame) error { return nil }); err == nil {
		t.Error("an empty recording replayed")
	}
}

// steady is a sender's samples on the ticks of a period, each late by up
// to a tenth of it (a ticker's jitter, seeded), moving rate, with the
// chrono counters set.
func steady(r *rand.Rand, cookie uint64, n int, period time.Duration, rate model.Bitrate) []model.Socket {
	var out []model.Socket
	for i := range n {
		at := time.Duration(i)*period + time.Duration(r.Int64N(int64(period/10)))
		s := sock(cookie, at, model.Bytes(float64(rate)/8*at.Seconds()), 0)
		s.TCP.SndCwnd, s.TCP.SndMSS, s.TCP.RTT = 100, 1448, 20*time.Millisecond
		s.TCP.MinRTT, s.TCP.SndWnd = model.Some(20*time.Millisecond), model.Some[model.Bytes](4<<20)
		s.TCP.BusyTime, s.TCP.RwndLimited, s.TCP.SndbufLimited = model.Some(at), model.Some(time.Duration(0)), model.Some(time.Duration(0))
		out = append(out, s)
	}
	return out
}

// The running diagnosis is on every frame of a steady transfer once two
// samples are kept, recomputed about every Every (not every frame, and
// not every other period when ticks come a little early), and starts
// afresh, from the new connection's own samples, when another takes the
// followed one's place. The watch once put it only on the frames where
// it was recomputed: the terminal view said "gathering evidence…" four
// frames in five, and every other --json-stream line at -i 500ms lacked
// it.
func TestRunningDiagnosisOnEveryFrame(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, period := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond} {
		tr := &Tracker{Window: 10 * time.Second}
		run := &Running{Every: 500 * time.Millisecond}
		socks := steady(r, 9, int(30*time.Second/period), period, 100*model.MbitPerSecond)
		var last []model.Finding
		var lastAt time.Duration
		for i, s := range socks {
			f := tr.Add(s.TCP.At, []model.Socket{s})
			run.Attach(tr, &f)
			switch {
			case i == 0 && f.Diagnosis != nil:
				t.Errorf("%v: a diagnosis from one sample: %v", period, f.Diagnosis)
			case i > 0 && len(f.Diagnosis) == 0:
				t.Errorf("%v: frame %d of a steady transfer has no diagnosis", period, i)
			}
			if i > 1 && len(f.Diagnosis) > 0 && &f.Diagnosis[0] != &last[0] {
				// Recomputed: about Every after the last time, at
				// the first sample due.
				if gap := f.At - lastAt; gap < run.Every*9/10 || gap > max(run.Every, period)+period/5 {
					t.Errorf("%v: frame %d recomputed %v after the last time", period, i, gap)
				}
				lastAt = f.At
			} else if i > 1 && f.At-lastAt > max(run.Every, period)+period/5 {
				t.Fatalf("%v: frame %d not recomputed for %v", period, i, f.At-lastAt)
			}
			if i == 1 {
				lastAt = f.At
			}
			last = f.Diagnosis
		}
	}

	// The followed connection closes and another takes its place: the
	// new one's first frame has one sample of it, and no diagnosis.
	tr := &Tracker{Window: 10 * time.Second}
	run := &Running{Every: 500 * time.Millisecond}
	a := steady(r, 1, 10, 100*time.Millisecond, 100*model.MbitPerSecond)
	for _, s := range a {
		f := tr.Add(s.TCP.At, []model.Socket{s})
		run.Attach(tr, &f)
	}
	b := steady(r, 2, 10, 100*time.Millisecond, 10*model.MbitPerSecond)
	for i, s := range b {
		s.TCP.At += time.Second
		f := tr.Add(s.TCP.At, []model.Socket{s})
		run.Attach(tr, &f)
		if i == 0 && (f.Diagnosis != nil || len(f.Closed) != 1) {
			t.Errorf("the new connection's first frame: diagnosis %v, closed %d", f.Diagnosis, len(f.Closed))
		}
		if i > 0 && len(f.Diagnosis) == 0 {
			t.Errorf("frame %d of the new connection has no diagnosis", i)
		}
	}
}

// The busiest connection first: by rate, and by the bytes moved in its
// life where rates tie, as on first sight, when none is known.
func TestBusiest(t *testing.T) {
	var tr Tracker
	f := tr.Add(0, []model.Socket{sock(1, 0, 10, 0), sock(2, 0, 0, 5000), sock(3, 0, 300, 20)})
	b := Busiest(f.Rows)
	if b[0].Cookie != 2 || b[1].Cookie != 3 || b[2].Cookie != 1 {
		t.Errorf("first sight: %d %d %d, want 2 3 1 (by bytes moved)", b[0].Cookie, b[1].Cookie, b[2].Cookie)
	}
	// A second later 1 sent a megabyte, 2 nothing, 3 a kilobyte, and 4
	// is new: rates first, then bytes.
	f = tr.Add(time.Second, []model.Socket{sock(1, time.Second, 1_000_010, 0), sock(2, time.Second, 0, 5000),
		sock(3, time.Second, 1300, 20), sock(4, time.Second, 0, 4000)})
	b = Busiest(f.Rows)
	var got []uint64
	for _, r := range b {
		got = append(got, r.Cookie)
	}
	if !slices.Equal(got, []uint64{1, 3, 2, 4}) {
		t.Errorf("order %v, want [1 3 2 4]", got)
	}
	if f.Rows[0].Cookie != 1 || &b[0] == &f.Rows[0] {
		t.Error("Busiest reordered the rows it was given")
	}
}

// Goodput over the last span of a connection's kept samples.
func TestGoodput(t *testing.T) {
	tr := &Tracker{Window: 10 * time.Second}
	if _, ok := tr.Goodput(1, time.Second); ok {
		t.Error("goodput of an unknown connection")
	}
	// 1 MB/s for 5 s, then 2 MB/s: the last second is 16 Mbit/s, the
	// last 10 s (more than is kept) 12.
	var acked model.Bytes
	for i := range 101 {
		at := time.Duration(i) * 100 * time.Millisecond
		tr.Add(at, []model.Socket{sock(1, at, acked, 0)})
		if i == 0 {
			if _, ok := tr.Goodput(1, time.Second); ok {
				t.Error("goodput from one sample")
			}
		}
		if i < 50 {
			acked += 100_000
		} else {
			acked += 200_000
		}
	}
	if r, ok := tr.Goodput(1, time.Second); !ok || r != 16*model.MbitPerSecond {
		t.Errorf("last second %v %v, want 16 Mbit/s", r, ok)
	}
	if r, ok := tr.Goodput(1, time.Minute); !ok || r != 12*model.MbitPerSecond {
		t.Errorf("whole window %v %v, want 12 Mbit/s", r, ok)
	}
}
