package experiment

import (
	"context"
	"errors"
	"fmt"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/lab/profile"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
)

// LabBuilder returns a Builder of real testbeds: network namespaces for A
// and B joined by the path, a tcpscope server in B, clients run in A.
func LabBuilder(version string) Builder {
	return func(ctx context.Context, path profile.Path, a, b profile.Host) (Testbed, error) {
		return newLabTestbed(ctx, version, PairConfig(path, a, b))
	}
}

// PairConfig is the lab configuration of a path between hosts tuned as a
// and b (tunings already resolved for the path with Host.For): the
// userspace emulator carries the path, the delay split evenly between the
// two directions.
func PairConfig(path profile.Path, a, b profile.Host) lab.PairConfig {
	dir := func(rate model.Bitrate) emulator.Direction {
		d := emulator.Direction{Delay: path.RTT / 2, Rate: rate, Loss: path.Loss, MTU: path.MTU}
		if path.Queue > 0 {
			d.Queue = emulator.Queue{Time: path.Queue}
		}
		return d
	}
	return lab.PairConfig{
		MTU:      path.MTU,
		Emulated: &emulator.Config{AtoB: dir(path.Rate), BtoA: dir(path.RateBack)},
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
	addr, stop, err := pair.Serve(ctx, 0, version)
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
		run, err = (&perf.Client{Version: t.version}).Run(ctx, t.addr, cfg)
		return err
	})
	return run, err
}

func (t *labTestbed) Close() error {
	t.stop()
	return t.pair.Close()
}
