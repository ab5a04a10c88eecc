package experiment_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/experiment"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/lab/profile"
)

// Each experiment at small scale on real emulated paths: the output must
// have the shape the physics gives.
func run(t *testing.T, name, path string) *experiment.Result {
	t.Helper()
	labtest.Require(t)
	set, err := profile.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	env := experiment.Env{
		Build: experiment.LabBuilder("test", lab.Auto, nil), Profiles: set, Path: path, Quick: true,
		Duration: 3 * time.Second, Omit: time.Second, Repeat: 1,
		Progress: t.Logf,
	}
	res, err := experiment.Run(context.Background(), name, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Points {
		t.Logf("%s: %.1f Mbit/s (model %.1f)", p.Label, p.Summary.Mean/1e6, p.Model/1e6)
	}
	return res
}

func mean(r *experiment.Result, i int) float64 { return r.Points[i].Summary.Mean }

func TestNetnsWindowSweep(t *testing.T) {
	res := run(t, "window-sweep", "vhp")
	for i, p := range res.Points {
		if math.Abs(p.Summary.Mean/p.Model-1) > 0.15 {
			t.Errorf("%s: %.1f Mbit/s, more than 15%% from min(window/RTT, rate) = %.1f", p.Label, p.Summary.Mean/1e6, p.Model/1e6)
		}
		if i > 0 && mean(res, i) < mean(res, i-1)*0.98 {
			t.Errorf("goodput fell from %s to %s", res.Points[i-1].Label, p.Label)
		}
	}
}

func TestNetnsTuning(t *testing.T) {
	res := run(t, "tuning", "vhp")
	// A 64 KiB window without scaling over 20 ms cannot carry more than
	// about 26 Mbit/s; tuned hosts fill the 100 Mbit/s path.
	if mean(res, 0) > 27e6 || mean(res, 1) < 85e6 {
		t.Fatalf("mistuned %.1f, tuned %.1f Mbit/s", mean(res, 0)/1e6, mean(res, 1)/1e6)
	}
}

func TestNetnsLossSweep(t *testing.T) {
	res := run(t, "loss-sweep", "lossy-wan")
	for i := 1; i < len(res.Points); i++ {
		if mean(res, i) >= mean(res, i-1) {
			t.Errorf("goodput did not fall with loss: %s %.1f → %s %.1f", res.Points[i-1].Label, mean(res, i-1)/1e6, res.Points[i].Label, mean(res, i)/1e6)
		}
	}
	// Reno stays within a factor of two of the Mathis bound where loss
	// limits it (the bound assumes periodic loss; random loss is kinder).
	last := res.Points[len(res.Points)-1]
	if r := last.Summary.Mean / last.Model; r < 0.5 || r > 2 {
		t.Errorf("at %s: measured/Mathis = %.2f", last.Label, r)
	}
}

func TestNetnsParallel(t *testing.T) {
	res := run(t, "parallel", "lossy-wan")
	if mean(res, 1) < 1.5*mean(res, 0) {
		t.Fatalf("4 streams (%.1f) not well above 1 (%.1f) under loss", mean(res, 1)/1e6, mean(res, 0)/1e6)
	}
}

func TestNetnsCCCompare(t *testing.T) {
	res := run(t, "cc-compare", "lossy-wan")
	byName := map[string]float64{}
	for i, p := range res.Points {
		byName[p.Label] = mean(res, i)
	}
	// bbr does not read random loss as congestion; reno halves on each.
	if byName["bbr"] < 2*byName["reno"] {
		t.Fatalf("bbr %.1f, reno %.1f Mbit/s", byName["bbr"]/1e6, byName["reno"]/1e6)
	}
}

func TestNetnsMTUSweep(t *testing.T) {
	res := run(t, "mtu-sweep", "lossy-wan")
	if mean(res, 1) < 1.5*mean(res, 0) {
		t.Fatalf("MTU 9000 (%.1f) not well above 1500 (%.1f) under per-packet loss", mean(res, 1)/1e6, mean(res, 0)/1e6)
	}
}
