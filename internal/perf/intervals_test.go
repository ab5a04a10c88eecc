package perf

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// sends records what an intervalSender sent, write by write.
type sends struct {
	mu     sync.Mutex
	writes [][]int // interval indexes, per write
	err    error   // what each write returns
}

func (s *sends) send(ms ...*message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var w []int
	for _, m := range ms {
		if m.Type != msgInterval || m.Interval == nil {
			panic("not an interval message")
		}
		w = append(w, m.Interval.Index)
	}
	s.writes = append(s.writes, w)
	return s.err
}

func (s *sends) got() [][]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]int(nil), s.writes...)
}

// inOrder reports whether writes carry intervals 0..n-1 in order.
func inOrder(writes [][]int, n int) bool {
	next := 0
	for _, w := range writes {
		for _, i := range w {
			if i != next {
				return false
			}
			next++
		}
	}
	return next == n
}

// Without a tick each interval goes out alone, as it comes.
func TestIntervalSenderAtOnce(t *testing.T) {
	var s sends
	q := startIntervalSender(s.send, nil, func() { t.Error("failed") })
	for i := range 5 {
		if !q.add(model.Interval{Index: i}) {
			t.Fatalf("interval %d refused", i)
		}
		waitFor(t, "the interval sent", func() bool { return len(s.got()) == i+1 })
	}
	if err := q.close(); err != nil {
		t.Fatal(err)
	}
	if w := s.got(); len(w) != 5 || !inOrder(w, 5) {
		t.Errorf("writes %v, want each of 5 intervals alone, in order", w)
	}
}

// With a tick, what came by a tick goes out in one write, and close sends
// the rest.
func TestIntervalSenderBatches(t *testing.T) {
	var s sends
	tick := make(chan time.Time)
	q := startIntervalSender(s.send, tick, func() { t.Error("failed") })
	for i := range 5 {
		q.add(model.Interval{Index: i})
	}
	if len(s.got()) != 0 {
		t.Fatalf("sent %v before any tick", s.got())
	}
	// A tick may find the first intervals still queued, not yet in the
	// batch: tick until a batch goes out.
	ticks := 0
	waitFor(t, "a batch sent", func() bool {
		tick <- time.Now()
		ticks++
		return len(s.got()) > 0
	})
	for i := 5; i < 8; i++ {
		q.add(model.Interval{Index: i})
	}
	if err := q.close(); err != nil {
		t.Fatal(err)
	}
	// A write per tick at most, and the close's.
	if w := s.got(); len(w) > ticks+1 || !inOrder(w, 8) {
		t.Errorf("writes %v after %d ticks, want 8 intervals in order in at most %d writes", w, ticks, ticks+1)
	}
}

// A failed send stops the sending: onFail is called once, nothing more
// is sent, and close returns the failure.
func TestIntervalSenderFails(t *testing.T) {
	s := sends{err: errors.New("broken pipe")}
	var fails sync.WaitGroup
	fails.Add(1)
	q := startIntervalSender(s.send, nil, fails.Done) // a second call panics
	for i := range 3 {
		q.add(model.Interval{Index: i})
	}
	if err := q.close(); err == nil || err.Error() != "broken pipe" {
		t.Errorf("close: %v, want the send's failure", err)
	}
	fails.Wait()
	if w := s.got(); len(w) != 1 {
		t.Errorf("writes %v, want the one that failed", w)
	}
}

// A client a queue behind (its writes blocked) is refused more: add says
// so and the server aborts the test.
func TestIntervalSenderFull(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var s sends
	blocked := func(ms ...*message) error {
		if ms[0].Interval.Index == 0 {
			close(entered)
			<-release
		}
		return s.send(ms...)
	}
	q := startIntervalSender(blocked, nil, func() { t.Error("failed") })
	q.add(model.Interval{Index: 0})
	<-entered // the sender holds interval 0, blocked writing it
	for i := 1; i <= intervalQueue; i++ {
		if !q.add(model.Interval{Index: i}) {
			t.Fatalf("interval %d refused with %d queued", i, i-1)
		}
	}
	if q.add(model.Interval{Index: intervalQueue + 1}) {
		t.Fatalf("interval %d taken with the queue full", intervalQueue+1)
	}
	close(release)
	if err := q.close(); err != nil {
		t.Fatal(err)
	}
	if w := s.got(); !inOrder(w, intervalQueue+1) {
		t.Errorf("writes %v, want the %d intervals queued, in order", w, intervalQueue+1)
	}
}
