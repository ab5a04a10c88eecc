package diagnose_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
)

var record = flag.Bool("record", false, "write each scenario's run to testdata/ID.json for TestRecorded")

// scenario is one impairment the lab builds and the finding that must
// name it: as the primary finding, or (for properties that sit beside
// the limit, like SACK off) anywhere in the diagnosis.
type scenario struct {
	name    string
	path    emulator.Direction // A→B; B→A gets the same delay only
	a, b    lab.HostConfig
	test    model.TestConfig
	want    string
	primary bool
	seed    uint64 // fixes the path's random draws where the count of rare events decides the verdict
}

func (s scenario) pair() lab.PairConfig {
	back := emulator.Direction{Delay: s.path.Delay}
	return lab.PairConfig{Emulated: &emulator.Config{AtoB: s.path, BtoA: back, Seed: s.seed}, A: s.a, B: s.b, Backend: lab.UseEmulator}
}

// TestScenarios is the diagnosis's proof on real kernels: for each
// impairment the lab builds, the diagnosis of a tcpscope test across it
// must name it. A table of scenario → primary finding → verdict is logged.
func TestScenarios(t *testing.T) {
	labtest.Require(t)
	const mbit = model.MbitPerSecond
	ms := time.Millisecond
	small := lab.BufferSizes{Min: 4096, Default: 65536, Max: 128 * model.KiB}
	scenarios := []scenario{
		{name: "small receiver buffer", path: emulator.Direction{Delay: 10 * ms, Rate: 100 * mbit},
			b: lab.HostConfig{Rmem: small}, want: "rwnd-limited", primary: true},
		{name: "window scaling off", path: emulator.Direction{Delay: 10 * ms, Rate: 100 * mbit},
			b: lab.HostConfig{WindowScaling: lab.Off}, want: "wscale-off", primary: true},
		{name: "small sender buffer", path: emulator.Direction{Delay: 10 * ms, Rate: 100 * mbit},
			a: lab.HostConfig{Wmem: lab.BufferSizes{Min: 4096, Default: 16384, Max: 64 * model.KiB}}, want: "sndbuf-limited", primary: true},
		{name: "random loss on a long path", path: emulator.Direction{Delay: 30 * ms, Rate: 100 * mbit, Loss: 0.003},
			test: model.TestConfig{Congestion: "reno"}, want: "loss-limited", primary: true},
		{name: "random loss under BBR", path: emulator.Direction{Delay: 20 * ms, Rate: 100 * mbit, Loss: 0.003},
			test: model.TestConfig{Congestion: "bbr"}, want: "lossy-path"},
		{name: "healthy bottleneck", path: emulator.Direction{Delay: 5 * ms, Rate: 50 * mbit, Queue: emulator.Queue{Time: 20 * ms}},
			test: model.TestConfig{Congestion: "cubic"}, want: "bottleneck", primary: true},
		{name: "deep queue", path: emulator.Direction{Delay: 5 * ms, Rate: 20 * mbit, Queue: emulator.Queue{Time: 400 * ms}},
			test: model.TestConfig{Congestion: "cubic"}, want: "bufferbloat"},
		{name: "SACK off", path: emulator.Direction{Delay: 5 * ms, Rate: 50 * mbit},
			a: lab.HostConfig{SACK: lab.Off}, b: lab.HostConfig{SACK: lab.Off}, want: "sack-off"},
		{name: "MSS clamp", path: emulator.Direction{Delay: 5 * ms, Rate: 50 * mbit},
			b: lab.HostConfig{MSS: 536}, want: "small-mss"},
		{name: "slow-reading receiver", path: emulator.Direction{Delay: 10 * ms, Rate: 100 * mbit},
			test: model.TestConfig{ReadRate: 20 * mbit}, want: "slow-reader", primary: true},
		{name: "path-MTU black hole", path: emulator.Direction{Delay: 5 * ms, Rate: 50 * mbit, MTU: 1400, BlackHole: true},
			want: "pmtu-blackhole", primary: true},
		{name: "paced sender", path: emulator.Direction{Delay: 10 * ms, Rate: 100 * mbit},
			test: model.TestConfig{FQRate: 10 * mbit}, want: "pacing-limited", primary: true},
		{name: "application-limited sender", path: emulator.Direction{Delay: 10 * ms, Rate: 100 * mbit},
			test: model.TestConfig{Bitrate: 20 * mbit}, want: "sender-app-limited", primary: true},
		{name: "timestamps off", path: emulator.Direction{Delay: 5 * ms, Rate: 50 * mbit},
			a: lab.HostConfig{Timestamps: lab.Off}, want: "timestamps-off"},
		{name: "bursts of loss", path: emulator.Direction{Delay: 20 * ms, Rate: 50 * mbit,
			// Bursts of 40 packets on average, all lost: longer than reno's
			// window here, so whole flights and their retransmissions go
			// and only a timeout recovers.
			GE: &emulator.GilbertElliott{P: 0.005, R: 0.025, LossBad: 1}}, seed: 11, test: model.TestConfig{Congestion: "reno"}, want: "rto-stalls"},
		{name: "stopped reader", path: emulator.Direction{Delay: 5 * ms, Rate: 100 * mbit},
			test: model.TestConfig{ReadRate: 200 * model.KbitPerSecond}, want: "zero-window"},
		{name: "reordering", path: emulator.Direction{Delay: 5 * ms, Rate: 50 * mbit, Reorder: 0.05},
			want: "reordering"},
	}
	var table []string
	for _, s := range scenarios {
		t.Run(strings.ReplaceAll(s.name, " ", "-"), func(t *testing.T) {
			p := labtest.Pair(t, s.pair())
			addr, stop, err := p.Serve(t.Context(), 0, "test")
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			cfg := s.test
			cfg.Duration, cfg.Omit = 4*time.Second, time.Second
			var run *model.Run
			err = p.A.Do(func() error {
				var err error
				run, err = (&perf.Client{Version: "test"}).Run(t.Context(), addr, cfg)
				return err
			})
			if run == nil {
				t.Fatal(err)
			}
			if err != nil {
				// A broken path ends the test early; its diagnosis must
				// still say why.
				t.Logf("test ended with: %v", err)
			}
			if *record {
				run.Diagnosis = nil
				b, err := json.MarshalIndent(run, "", " ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join("testdata", s.want+".json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fs := diagnose.Test(run, diagnose.Options{})
			ids := make([]string, len(fs))
			for i, f := range fs {
				ids[i] = f.ID
			}
			ok := len(fs) > 0 && fs[0].ID == s.want
			if !s.primary {
				ok = slices.Contains(ids, s.want)
			}
			verdict := "ok"
			if !ok {
				verdict = "FAILED"
				for _, f := range fs {
					t.Logf("%s: %s", f.ID, f.Summary)
					for _, e := range f.Evidence {
						t.Logf("    %s: %s", e.What, e.Value)
					}
				}
				t.Errorf("%s: findings %v, want %s %s", s.name, ids, s.want, map[bool]string{true: "first", false: "among them"}[s.primary])
			}
			primary := "none"
			if len(fs) > 0 {
				primary = fs[0].ID
			}
			table = append(table, fmt.Sprintf("%-28s %-16s %-14s %s  (%s, all: %s)", s.name, primary, s.want, verdict,
				run.Summary[0].Goodput.V, strings.Join(ids, " ")))
		})
	}
	t.Logf("scenario → primary finding → wanted → verdict\n%s", strings.Join(table, "\n"))
}
