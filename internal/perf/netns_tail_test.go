package perf_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
)

// The tests of a timed test's end near -t (perf/tail.go) run across a
// 20 Mbit/s bottleneck with -w 8M: the sender's buffer holds some 3 s of
// the path, which used to drain after the planned end (-t 10 ran 13.4 s).

const tailRate = 20 * model.MbitPerSecond

// clockStart is an Observer that notes when the client's clock started
// (Begin) and runs f at the client's interval of index at.
type clockStart struct {
	mu    sync.Mutex
	begin time.Time
	at    int
	f     func()
	once  sync.Once
}

func (o *clockStart) Begin(*model.Run) {
	o.mu.Lock()
	o.begin = time.Now()
	o.mu.Unlock()
}

func (o *clockStart) Interval(side model.Side, iv *model.Interval) {
	if o.f != nil && side == model.ClientSide && iv.Index == o.at {
		o.once.Do(o.f)
	}
}

func (o *clockStart) began() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.begin
}

// runTimed runs cfg from host A with obs, and returns the run and how
// long the test took from the client's clock start to Run's return.
func runTimed(t *testing.T, p *lab.Pair, addr string, cfg model.TestConfig, obs *clockStart) (*model.Run, time.Duration) {
	t.Helper()
	var run *model.Run
	err := p.A.Do(func() error {
		var err error
		run, err = (&perf.Client{Version: "test", Observer: obs}).Run(context.Background(), addr, cfg)
		return err
	})
	took := time.Since(obs.began())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return run, took
}

// A sender with 8 MiB of buffer across a 20 Mbit/s path holds its last
// writes back so that its queue drains by the planned end: the test ends
// within a cut's bound of -t (rather than 3 s past it), the run says so,
// and every byte counted arrived. Both directions: the client sending,
// and the server (-R).
func TestNetnsTailEndsNearPlannedEnd(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{AtoB: lab.Impairment{Rate: tailRate}, BtoA: lab.Impairment{Rate: tailRate}})
	addr := serveIn(t, p)
	for _, reverse := range []bool{false, true} {
		name := "client sends"
		if reverse {
			name = "server sends (-R)"
		}
		t.Run(name, func(t *testing.T) {
			cfg := model.TestConfig{Duration: 4 * time.Second, Interval: time.Second, Window: 8 * model.MiB, Reverse: reverse}
			run, took := runTimed(t, p, addr, cfg, &clockStart{})
			sum := run.Summary[0]
			t.Logf("took %v; goodput %v; tail %+v", took.Round(time.Millisecond), sum.Goodput.V, sum.Tail)
			// Past -t: the last bytes' way (an RTT at most, queue
			// included), the cut's bound should the rate have fallen
			// at the end, and the results' exchange.
			if bound := cfg.Duration + engine.CutAfter + 500*time.Millisecond; took > bound {
				t.Errorf("the test took %v from its clock's start: want at most %v", took, bound)
			}
			if sum.Tail == nil || (!sum.Tail.HeldFor.OK && !sum.Tail.CutAt.OK) {
				t.Fatalf("no note of the held-back writes or of a cut: %+v", sum.Tail)
			}
			if h, ok := sum.Tail.HeldFor.Get(); ok && (h <= 0 || h > cfg.Duration) {
				t.Errorf("held for %v of a %v test", h, cfg.Duration)
			}
			if run.Ended != "complete" {
				t.Errorf("ended %q", run.Ended)
			}
			checkCounted(t, run)
		})
	}
}

// The path's rate falls to a twentieth a second before the end: what the
// sender queued for the full rate cannot drain in time, and the receiver
// cuts its wait at the bound, counting what its kernel received then,
// and no byte more; the run names the cut and what went uncounted.
func TestNetnsTailCut(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{AtoB: lab.Impairment{Rate: tailRate}, BtoA: lab.Impairment{Rate: tailRate}})
	addr := serveIn(t, p)
	cfg := model.TestConfig{Duration: 4 * time.Second, Interval: time.Second, Window: 8 * model.MiB, Reverse: true}
	slowed := make(chan error, 1)
	obs := &clockStart{at: 2, f: func() {
		go func() { slowed <- p.SetImpairment(context.Background(), lab.BtoA, lab.Impairment{Rate: tailRate / 20}) }()
	}}
	run, took := runTimed(t, p, addr, cfg, obs)
	select {
	case err := <-slowed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the path was not slowed")
	}
	sum := run.Summary[0]
	t.Logf("took %v; goodput %v; tail %+v", took.Round(time.Millisecond), sum.Goodput.V, sum.Tail)
	if sum.Tail == nil || !sum.Tail.CutAt.OK {
		t.Fatalf("no cut noted: %+v", sum.Tail)
	}
	recv := run.Client.Totals[0]
	if recv.Role != model.Receiver || recv.Tail == nil || !recv.Tail.CutAt.OK {
		t.Fatalf("the client's receiver noted no cut: %+v", recv)
	}
	// The cut comes at the bound: max(engine.CutAfter, 2 RTT) past the planned
	// end on the receiver's clock, a read deadline's wake-up later.
	planned := cfg.Duration
	cut := recv.Tail.CutAt.V
	rtt := max(recv.Final.RTT, recv.Final.RcvRTT)
	if lo, hi := planned+engine.CutAfter, planned+max(engine.CutAfter, 2*rtt)+200*time.Millisecond; cut < lo || cut > hi {
		t.Errorf("cut at %v: want within [%v, %v]", cut, lo, hi)
	}
	if bound := cut + 500*time.Millisecond; took > bound {
		t.Errorf("the test took %v from its clock's start, its cut was at %v", took, cut)
	}
	// What the receiver counted is what its kernel had received when it
	// cut: the sender's FIN was queued behind what never came, so the
	// kernel's count is the data's alone.
	if got, kernel := recv.AllBytes, recv.Final.BytesReceived; !kernel.OK || got != kernel.V {
		t.Errorf("receiver counted %v, its kernel received %v", got, kernel)
	}
	if u, ok := sum.Tail.Uncounted.Get(); !ok || u == 0 || u != sum.SenderBytes.V-sum.ReceiverBytes.V {
		t.Errorf("uncounted %v: want written %v less received %v", sum.Tail.Uncounted, sum.SenderBytes, sum.ReceiverBytes)
	}
	if run.Ended != "complete" {
		t.Errorf("ended %q", run.Ended)
	}
	checkCounted(t, run)
}

// checkCounted: no direction's receiver counts more than its sender wrote,
// and without a cut both count the same; the headline is the receiver's
// bytes over its time.
func checkCounted(t *testing.T, run *model.Run) {
	t.Helper()
	for _, s := range run.Summary {
		sent, recv := s.SenderBytes.V, s.ReceiverBytes.V
		cut := s.Tail != nil && s.Tail.CutAt.OK
		switch {
		case recv > sent:
			t.Errorf("%v: received %v of %v written", s.Direction, recv, sent)
		case !cut && recv != sent:
			t.Errorf("%v: no cut, yet received %v of %v written", s.Direction, recv, sent)
		}
		if want := model.RateOf(recv, s.Duration.V.Seconds()); s.Goodput.V != want {
			t.Errorf("%v: goodput %v, want the receiver's %v over its %v: %v", s.Direction, s.Goodput.V, recv, s.Duration.V, want)
		}
	}
}
