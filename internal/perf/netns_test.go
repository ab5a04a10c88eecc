package perf_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/dial"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/lab/experiment"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
)

// serveIn starts a tcpscope server inside host B of the pair.
func serveIn(t *testing.T, p *lab.Pair) string {
	t.Helper()
	addr, stop, err := experiment.Serve(t.Context(), p, 0, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// runFrom runs a client inside host A: every socket the client opens is
// created on the calling goroutine, which Do keeps inside A's namespace.
func runFrom(t *testing.T, p *lab.Pair, addr string, cfg model.TestConfig) *model.Run {
	t.Helper()
	var run *model.Run
	err := p.A.Do(func() error {
		var err error
		run, err = (&perf.Client{Version: "test"}).Run(context.Background(), addr, cfg)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// A 100 Mbit/s bottleneck must measure as one: TCP's payload share of a
// 1500-byte frame is 1448/1514, so ~95.6 Mbit/s is the ceiling to expect.
func TestNetnsBottleneckRate(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{AtoB: lab.Impairment{Rate: 100 * model.MbitPerSecond}})
	addr := serveIn(t, p)
	run := runFrom(t, p, addr, model.TestConfig{Duration: 3 * time.Second, Omit: time.Second, Interval: 500 * time.Millisecond})
	got := run.Summary[0].Goodput.V
	t.Logf("goodput %v over a 100 Mbit/s tbf", got)
	if got < 85*model.MbitPerSecond || got > 101*model.MbitPerSecond {
		t.Fatalf("goodput %v outside 85-101 Mbit/s", got)
	}
	if run.Summary[0].ReceiverBytes.V != run.Summary[0].SenderBytes.V && run.Config.Omit == 0 {
		t.Fatal("ends disagree")
	}
}

// The seeds' classic: window scaling off caps the receive window at 64 KiB,
// and a loss-based sender then spends its time waiting for the receiver.
func TestNetnsReceiveWindowLimited(t *testing.T) {
	small := lab.BufferSizes{Min: 4096, Default: 64 * model.KiB, Max: 64 * model.KiB}
	p := labtest.Pair(t, lab.PairConfig{
		AtoB: lab.Impairment{Rate: 100 * model.MbitPerSecond},
		B:    lab.HostConfig{WindowScaling: lab.Off, Rmem: small},
	})
	addr := serveIn(t, p)
	run := runFrom(t, p, addr, model.TestConfig{Duration: 3 * time.Second, Interval: 500 * time.Millisecond, Congestion: "cubic"})
	tot := run.Client.Totals[0]
	if tot.Final.Options.WindowScaling {
		t.Fatal("window scaling negotiated although the receiver's host disabled it")
	}
	if w, ok := tot.MaxSndWnd.Get(); !ok || w > 65535 {
		t.Fatalf("peer window %v: want at most 65535 B without window scaling", w)
	}
	l, ok := tot.Limited.Get()
	if !ok {
		t.Fatal("kernel gave no limited-time counters")
	}
	t.Logf("limited: rwnd %.2f sndbuf %.2f cwnd %.2f app %.2f; goodput %v", l.Rwnd, l.Sndbuf, l.Cwnd, l.App, run.Summary[0].Goodput.V)
	if l.Rwnd < 0.5 || l.Rwnd < l.Cwnd || l.Rwnd < l.Sndbuf || l.Rwnd < l.App {
		t.Fatalf("receive-window-limited fraction %.2f does not dominate: %+v", l.Rwnd, l)
	}
	// Every interval after the first shows it too: this is what the user sees live.
	for _, iv := range run.Client.Intervals[1:] {
		if li, ok := iv.Streams[0].Limited.Get(); ok && li.Rwnd < li.Cwnd {
			t.Errorf("interval %d: rwnd %.2f < cwnd %.2f", iv.Index, li.Rwnd, li.Cwnd)
		}
	}
}

// A path that drops everything: the client's connection attempt times out
// and says so (exit code 5 on the command line), rather than hanging.
func TestNetnsConnectTimeout(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{AtoB: lab.Impairment{Loss: 1}})
	addr := serveIn(t, p)
	err := p.A.Do(func() error {
		_, err := (&perf.Client{Dialer: dial.Dialer{ConnectTimeout: time.Second}}).Run(context.Background(), addr, model.TestConfig{Duration: time.Second})
		return err
	})
	if fault.CodeOf(err) != fault.Timeout || fault.HintOf(err) == "" {
		t.Fatalf("got %v (code %q), want a timeout with a hint", err, fault.CodeOf(err))
	}
}

// A path that dies mid-test: both ends give up once nothing has moved for
// stallLimit after the planned end, rather than waiting out the 30 s
// grace, and the run comes back with what was measured.
func TestNetnsPathDiesMidTest(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{})
	addr := serveIn(t, p)
	// The path dies mid-test: once the client's first interval is in.
	cut := make(chan error, 1)
	die := &firstInterval{f: func() {
		go func() { cut <- p.SetImpairment(context.Background(), lab.AtoB, lab.Impairment{Loss: 1}) }()
	}}
	start := time.Now()
	var run *model.Run
	err := p.A.Do(func() error {
		var err error
		run, err = (&perf.Client{Observer: die}).Run(context.Background(), addr, model.TestConfig{Duration: 2 * time.Second, Interval: 500 * time.Millisecond})
		return err
	})
	took := time.Since(start)
	select {
	case err := <-cut:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the path was not cut: the test ended before its first interval")
	}
	t.Logf("ended after %v: %v", took.Round(time.Millisecond), err)
	if err == nil || run == nil || fault.CodeOf(err) != fault.Aborted {
		t.Fatalf("run %v, err %v (code %q); want the run and an aborted error", run != nil, err, fault.CodeOf(err))
	}
	if took > 2*time.Second+15*time.Second {
		t.Errorf("a dead path held the test %v", took)
	}
	if !strings.Contains(err.Error(), "stopped delivering") {
		t.Errorf("error %q does not say the path stopped delivering", err)
	}
}

// firstInterval is an Observer that calls f at the client's first
// interval.
type firstInterval struct {
	f    func()
	once sync.Once
}

func (o *firstInterval) Begin(*model.Run) {}

func (o *firstInterval) Interval(side model.Side, _ *model.Interval) {
	if side == model.ClientSide {
		o.once.Do(o.f)
	}
}

// UDP across a lossy, rate-limited path: the receiver's loss count is the
// path's (within the binomial 99.9% interval), the socket dropped nothing,
// and the diagnosis of the run names the path, not the host.
func TestNetnsUDPLoss(t *testing.T) {
	const loss = 0.02
	fwd := emulator.Impairment{Rate: 100 * model.MbitPerSecond, Loss: loss, Delay: 10 * time.Millisecond}
	p := labtest.Pair(t, lab.PairConfig{Emulated: &emulator.Config{AtoB: fwd, BtoA: emulator.Impairment{Delay: 10 * time.Millisecond}}, Backend: lab.UseEmulator})
	addr := serveIn(t, p)
	run := runFrom(t, p, addr, model.TestConfig{Protocol: model.UDP, Duration: 3 * time.Second, Bitrate: 20 * model.MbitPerSecond, Length: 1400})
	u := run.Summary[0].UDP
	if u == nil {
		t.Fatalf("no datagram account: %+v", run.Summary[0])
	}
	n := float64(u.Packets)
	sd := math.Sqrt(n * loss * (1 - loss))
	t.Logf("%d of %d datagrams lost (%.3f%%), jitter %v, socket drops %v, goodput %v",
		u.Lost, u.Packets, 100*u.LossRate(), u.Jitter, u.SocketDrops, run.Summary[0].Goodput.V)
	if math.Abs(float64(u.Lost)-n*loss) > 3.3*sd {
		t.Errorf("lost %d of %d, expected %.0f ± %.0f", u.Lost, u.Packets, n*loss, 3.3*sd)
	}
	if g := run.Summary[0].Goodput.V; g < 18*model.MbitPerSecond || g > 20.2*model.MbitPerSecond {
		t.Errorf("goodput %v: 20 Mbit/s less 2%% loss expected", g)
	}
	if d, ok := u.SocketDrops.Get(); !ok || d != 0 {
		t.Errorf("socket drops %v on a 20 Mbit/s stream", u.SocketDrops)
	}
}
