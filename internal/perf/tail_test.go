package perf

import (
	"context"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// On loopback a timed test ends at its planned end as before: nothing is
// cut, both ends count the same bytes, and a sender holds back no more
// than its last moments (the queue drains in milliseconds), in each
// direction of a test.
func TestTailLoopbackEndsAtPlannedEnd(t *testing.T) {
	addr, _ := startServer(t, serve.Limits{})
	for _, c := range []struct {
		name string
		cfg  model.TestConfig
	}{
		{"client sends", model.TestConfig{}},
		{"server sends", model.TestConfig{Reverse: true}},
		{"bidir", model.TestConfig{Bidir: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := quick(c.cfg)
			cfg.Duration = time.Second
			start := time.Now()
			run, err := (&Client{Version: "test"}).Run(context.Background(), addr, cfg)
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			for _, s := range run.Summary {
				t.Logf("%v: %v over %v, tail %+v", s.Direction, s.Goodput.V, s.Duration.V, s.Tail)
				if s.ReceiverBytes.V != s.SenderBytes.V {
					t.Errorf("%v: received %v of %v", s.Direction, s.ReceiverBytes.V, s.SenderBytes.V)
				}
				if s.Tail != nil && s.Tail.CutAt.OK {
					t.Errorf("%v: cut at %v on loopback", s.Direction, s.Tail.CutAt.V)
				}
				if s.Tail != nil && s.Tail.HeldFor.V > cfg.Duration/4 {
					t.Errorf("%v: the sender stopped writing %v before the end", s.Direction, s.Tail.HeldFor.V)
				}
			}
			for _, e := range []*model.EndReport{&run.Client, &run.Remote} {
				for _, tot := range e.Totals {
					if tot.Role == model.Sender && tot.Duration < cfg.Duration {
						t.Errorf("%s's sender ran %v of %v", e.Side, tot.Duration, cfg.Duration)
					}
				}
			}
			// The handshakes and the results' exchange take
			// milliseconds here; a cut's bound would show.
			if took > cfg.Duration+engine.CutAfter {
				t.Errorf("took %v for a %v test", took, cfg.Duration)
			}
		})
	}
}
