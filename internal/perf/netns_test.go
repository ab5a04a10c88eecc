package perf_test

import (
	"context"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
)

// serveIn starts a tcpscope server inside host B of the pair.
func serveIn(t *testing.T, p *lab.Pair) string {
	t.Helper()
	addr, stop, err := p.Serve(t.Context(), 0, "test")
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
	p := labtest.Pair(t, lab.PairConfig{AtoB: lab.Path{Rate: 100 * model.MbitPerSecond}})
	addr := serveIn(t, p)
	run := runFrom(t, p, addr, model.TestConfig{Duration: 3 * time.Second, Omit: time.Second, Interval: 500 * time.Millisecond})
	got := run.Summary[0].Goodput
	t.Logf("goodput %v over a 100 Mbit/s tbf", got)
	if got < 85*model.MbitPerSecond || got > 101*model.MbitPerSecond {
		t.Fatalf("goodput %v outside 85-101 Mbit/s", got)
	}
	if run.Summary[0].ReceiverBytes != run.Summary[0].SenderBytes && run.Config.Omit == 0 {
		t.Fatal("ends disagree")
	}
}

// The seeds' classic: window scaling off caps the receive window at 64 KiB,
// and a loss-based sender then spends its time waiting for the receiver.
func TestNetnsReceiveWindowLimited(t *testing.T) {
	small := lab.BufferSizes{Min: 4096, Default: 64 * model.KiB, Max: 64 * model.KiB}
	p := labtest.Pair(t, lab.PairConfig{
		AtoB: lab.Path{Rate: 100 * model.MbitPerSecond},
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
	t.Logf("limited: rwnd %.2f sndbuf %.2f cwnd %.2f app %.2f; goodput %v", l.Rwnd, l.Sndbuf, l.Cwnd, l.App, run.Summary[0].Goodput)
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
	p := labtest.Pair(t, lab.PairConfig{AtoB: lab.Path{Loss: 1}})
	addr := serveIn(t, p)
	err := p.A.Do(func() error {
		_, err := (&perf.Client{ConnectTimeout: time.Second}).Run(context.Background(), addr, model.TestConfig{Duration: time.Second})
		return err
	})
	if perf.CodeOf(err) != perf.CodeTimeout || perf.HintOf(err) == "" {
		t.Fatalf("got %v (code %q), want a timeout with a hint", err, perf.CodeOf(err))
	}
}
