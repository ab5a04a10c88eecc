package experiment

import (
	"context"
	"errors"
	"fmt"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/lab/profile"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
)

// LabBuilder returns a Builder of real testbeds: network namespaces for A
// and B joined by the path, a tcpscope server in B, clients run in A. The
// backend carries the path (see lab.Backend); note, if not nil, hears
// which one did, on the first testbed and whenever it changes.
func LabBuilder(version string, backend lab.Backend, note func(format string, args ...any)) Builder {
	var last lab.Backend // Auto: none built yet
	return func(ctx context.Context, path profile.Path, a, b profile.Host) (Testbed, error) {
		cfg := PairConfig(path, a, b)
		cfg.Backend = backend
		tb, err := newLabTestbed(ctx, version, cfg)
		if err == nil && note != nil && tb.pair.Backend() != last {
			last = tb.pair.Backend()
			note("path %s carried by %s", path.Name, backendName(last))
		}
		return tb, err
	}
}

// backendName says what a backend is, for a reader.
func backendName(b lab.Backend) string {
	if b == lab.UseNetem {
		return "kernel netem in a router namespace"
	}
	return "tcpscope's userspace emulator"
}

// PairConfig is the lab configuration of a path between hosts tuned as a
// and b (tunings already resolved for the path with Host.For): the
// userspace emulator carries the path, the delay split evenly between the
// two directions.
func PairConfig(path profile.Path, a, b profile.Host) lab.PairConfig {
	return lab.PairConfig{
		MTU:      path.MTU,
		Emulated: &emulator.Config{AtoB: path.Impairment(path.Rate), BtoA: path.Impairment(path.RateBack)},
		A:        hostConfig(a),
		B:        hostConfig(b),
	}
}

func hostConfig(h profile.Host) lab.HostConfig {
	toggle := func(v *bool) lab.Toggle {
		switch {
		case v == nil:
			return lab.Unset
		case *v:
			return lab.On
		}
		return lab.Off
	}
	c := lab.HostConfig{SACK: toggle(h.SACK), Timestamps: toggle(h.Timestamps), WindowScaling: toggle(h.WindowScaling),
		CongestionControl: h.Congestion, MSS: h.MSS}
	if h.Rmem[2] > 0 {
		c.Rmem = lab.BufferSizes{Min: h.Rmem[0], Default: h.Rmem[1], Max: h.Rmem[2]}
	}
	if h.Wmem[2] > 0 {
		c.Wmem = lab.BufferSizes{Min: h.Wmem[0], Default: h.Wmem[1], Max: h.Wmem[2]}
	}
	return c
}

type labTestbed struct {
	pair    *lab.Pair
	addr    string
	version string
	stop    func()
}

func newLabTestbed(ctx context.Context, version string, cfg lab.PairConfig) (*labTestbed, error) {
	pair, err := lab.NewPair(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("build the lab: %w", err)
	}
	addr, stop, err := Serve(ctx, pair, 0, version)
	if err != nil {
		return nil, errors.Join(err, pair.Close())
	}
	return &labTestbed{pair: pair, addr: addr, version: version, stop: stop}, nil
}

// Test runs a client in host A. Every socket the client opens is created
// on the calling goroutine, which Do keeps inside A's namespace.
func (t *labTestbed) Test(ctx context.Context, cfg model.TestConfig) (*model.Run, error) {
	var run *model.Run
	err := t.pair.A.Do(func() error {
		var err error
		run, err = (&perf.Client{Version: t.version, SetupWarnings: diagnose.BufferWarnings}).Run(ctx, t.addr, cfg)
		return err
	})
	return run, err
}

func (t *labTestbed) Close() error {
	t.stop()
	return t.pair.Close()
}
