package measure

import (
	"context"
	"errors"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
)

// Test is one test as a client runs it.
type Test struct {
	// Client is the native client: network, local address, token, TLS,
	// the observer of intervals. Its SetupWarnings default to the
	// diagnosis's buffer warnings.
	Client *perf.Client
	// Iperf3 speaks iperf3's protocol only (--iperf3); otherwise a
	// native test falls back to it when the server is a stock iperf3.
	Iperf3 bool
	// ServerOutput asks an iperf3 server for its output; Blocks is an
	// iperf3 -k count.
	ServerOutput bool
	Blocks       int64
	// NoDiagnosis leaves the run without its diagnosis; Target is the
	// rate the diagnosis sizes fixes for (0: the path's).
	NoDiagnosis bool
	Target      model.Bitrate
}

// Run runs the test against addr (host:port). A run that broke off is
// returned with the error, its diagnosis included: what it measured is
// the diagnosis of why it broke.
func (t *Test) Run(ctx context.Context, addr string, cfg model.TestConfig) (*model.Run, error) {
	client := withWarnings(t.Client)
	i3 := &iperf3.Client{Dialer: client.Dialer, Version: client.Version, Observer: client.Observer, Now: client.Now,
		ServerOutput: t.ServerOutput, Blocks: t.Blocks}
	var run *model.Run
	var err error
	switch {
	case t.Iperf3:
		run, err = i3.Run(ctx, addr, cfg)
	default:
		run, err = client.Run(ctx, addr, cfg)
		if errors.Is(err, perf.ErrIperf3Server) {
			run, err = i3.Fallback(ctx, addr, cfg)
		}
	}
	if run != nil && !t.NoDiagnosis {
		run.Diagnosis = diagnose.Test(run, diagnose.Options{Target: t.Target})
	}
	return run, err
}

// withWarnings is c, or a copy of it that warns of socket setups as the
// diagnosis reads them when c has no SetupWarnings of its own.
func withWarnings(c *perf.Client) *perf.Client {
	if c.SetupWarnings != nil {
		return c
	}
	w := *c
	w.SetupWarnings = diagnose.BufferWarnings
	return &w
}
