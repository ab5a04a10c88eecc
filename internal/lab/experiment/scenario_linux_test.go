package experiment_test

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
	"github.com/tcpscope/tcpscope/internal/lab/experiment"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
)

// The recordings are internal/diagnose's golden inputs (its TestRecorded):
// these tests run the engine across the lab, which diagnose's own tests
// must not, and write what they saw there.
var record = flag.Bool("record", false, "write each run to internal/diagnose/testdata for diagnose's TestRecorded")

// recordingsDir is internal/diagnose/testdata, from this package's directory.
var recordingsDir = filepath.Join("..", "..", "diagnose", "testdata")

// scenario is one impairment the lab builds and the finding that must
// name it: as the primary finding (with the limits that bind with it),
// or (for properties that sit beside the limit, like SACK off) in the
// verdict, or among the findings when they are only information.
type scenario struct {
	name    string
	atob    emulator.Impairment // B→A gets the same delay only, unless btoa is set
	btoa    *emulator.Impairment
	mtu     int // the hosts' links; 0: 1500
	a, b    lab.HostConfig
	test    model.TestConfig
	want    string
	primary bool
	also    []string // further primary findings that bind with want, in order
	file    string   // the recording's name in testdata with -record; "" is want
	seed    uint64   // fixes the path's random draws where the count of rare events decides the verdict
}

func (s scenario) pair() lab.PairConfig {
	back := emulator.Impairment{Delay: s.atob.Delay}
	if s.btoa != nil {
		back = *s.btoa
	}
	return lab.PairConfig{Emulated: &emulator.Config{AtoB: s.atob, BtoA: back, Seed: s.seed}, MTU: s.mtu, A: s.a, B: s.b, Backend: lab.UseEmulator}
}

// verdictOK reports whether a diagnosis names want as the scenario asks:
// first (with its co-limits) when primary, else named by the verdict
// when it is a warning or worse, else among the findings. It also holds
// the one-verdict rule: whatever of warning or critical severity stands
// beside the limit, the verdict names it and is at least as severe.
func verdictOK(s scenario, fs []model.Finding) (bool, string) {
	if len(fs) == 0 {
		return false, "no findings"
	}
	var prim []string
	for _, f := range fs {
		if f.Primary && f.Direction == fs[0].Direction {
			prim = append(prim, f.ID)
		}
	}
	head := fs[0]
	for _, f := range fs[1:] {
		if !f.Primary && f.Direction == head.Direction && f.Severity != model.Info &&
			(!strings.Contains(head.Summary, "("+f.ID+")") || head.Severity.Rank() > f.Severity.Rank()) {
			return false, fmt.Sprintf("%s [%s] stands, and the verdict %s [%s] does not name it", f.ID, f.Severity, head.ID, head.Severity)
		}
	}
	if s.primary {
		if want := append([]string{s.want}, s.also...); !slices.Equal(prim, want) {
			return false, fmt.Sprintf("primary %v, want %v", prim, want)
		}
		return true, ""
	}
	for _, f := range fs {
		if f.ID != s.want {
			continue
		}
		if f.Severity != model.Info && !strings.Contains(head.Summary, "("+s.want+")") && !slices.Contains(prim, s.want) {
			return false, fmt.Sprintf("%s [%s] is not in the verdict", s.want, f.Severity)
		}
		return true, ""
	}
	return false, s.want + " not found"
}

// TestScenarios records real kernels' runs for diagnose's golden tests:
// for each impairment the lab builds, a tcpscope test across it, whose
// diagnosis must name it, written to internal/diagnose/testdata with
// -record. It runs only
// with -record: the precision suites (internal/lab/precision, run in CI)
// build these impairments and more, in both directions, and judge them.
func TestScenarios(t *testing.T) {
	if !*record {
		t.Skip("records testdata with -record; internal/lab/precision's TestSuites runs the scenarios")
	}
	labtest.Require(t)
	const mbit = model.MbitPerSecond
	ms := time.Millisecond
	small := lab.BufferSizes{Min: 4096, Default: 65536, Max: 128 * model.KiB}
	scenarios := []scenario{
		{name: "small receiver buffer", atob: emulator.Impairment{Delay: 10 * ms, Rate: 100 * mbit},
			b: lab.HostConfig{Rmem: small}, want: "rwnd-limited", primary: true},
		{name: "window scaling off", atob: emulator.Impairment{Delay: 10 * ms, Rate: 100 * mbit},
			b: lab.HostConfig{WindowScaling: lab.Off}, want: "wscale-off", primary: true},
		{name: "small sender buffer", atob: emulator.Impairment{Delay: 10 * ms, Rate: 100 * mbit},
			a: lab.HostConfig{Wmem: lab.BufferSizes{Min: 4096, Default: 16384, Max: 64 * model.KiB}}, want: "sndbuf-limited", primary: true},
		{name: "random loss on a long path", atob: emulator.Impairment{Delay: 30 * ms, Rate: 100 * mbit, Loss: 0.003},
			test: model.TestConfig{Congestion: "reno"}, want: "loss-limited", primary: true},
		{name: "random loss under BBR", atob: emulator.Impairment{Delay: 20 * ms, Rate: 100 * mbit, Loss: 0.003},
			test: model.TestConfig{Congestion: "bbr"}, want: "lossy-path"},
		{name: "healthy bottleneck", atob: emulator.Impairment{Delay: 5 * ms, Rate: 50 * mbit, Queue: emulator.Queue{Time: 20 * ms}},
			test: model.TestConfig{Congestion: "cubic"}, want: "bottleneck", primary: true},
		{name: "deep queue", atob: emulator.Impairment{Delay: 5 * ms, Rate: 20 * mbit, Queue: emulator.Queue{Time: 400 * ms}},
			test: model.TestConfig{Congestion: "cubic"}, want: "bufferbloat"},
		{name: "SACK off", atob: emulator.Impairment{Delay: 5 * ms, Rate: 50 * mbit},
			a: lab.HostConfig{SACK: lab.Off}, b: lab.HostConfig{SACK: lab.Off}, want: "sack-off"},
		{name: "MSS clamp", atob: emulator.Impairment{Delay: 5 * ms, Rate: 50 * mbit},
			b: lab.HostConfig{MSS: 536}, want: "small-mss"},
		{name: "slow-reading receiver", atob: emulator.Impairment{Delay: 10 * ms, Rate: 100 * mbit},
			test: model.TestConfig{ReadRate: 20 * mbit}, want: "slow-reader", primary: true},
		{name: "path-MTU black hole", atob: emulator.Impairment{Delay: 5 * ms, Rate: 50 * mbit, MTU: 1400, BlackHole: true},
			want: "pmtu-blackhole", primary: true},
		{name: "paced sender", atob: emulator.Impairment{Delay: 10 * ms, Rate: 100 * mbit},
			test: model.TestConfig{FQRate: 10 * mbit}, want: "pacing-limited", primary: true},
		{name: "application-limited sender", atob: emulator.Impairment{Delay: 10 * ms, Rate: 100 * mbit},
			test: model.TestConfig{Bitrate: 20 * mbit}, want: "sender-app-limited", primary: true},
		{name: "timestamps off", atob: emulator.Impairment{Delay: 5 * ms, Rate: 50 * mbit},
			a: lab.HostConfig{Timestamps: lab.Off}, want: "timestamps-off"},
		{name: "bursts of loss", atob: emulator.Impairment{Delay: 20 * ms, Rate: 50 * mbit,
			// Bursts of 40 packets on average, all lost: longer than reno's
			// window here, so whole flights and their retransmissions go
			// and only a timeout recovers.
			GE: &emulator.GilbertElliott{P: 0.005, R: 0.025, LossBad: 1}}, seed: 11, test: model.TestConfig{Congestion: "reno"}, want: "rto-stalls"},
		{name: "stopped reader", atob: emulator.Impairment{Delay: 5 * ms, Rate: 100 * mbit},
			test: model.TestConfig{ReadRate: 200 * model.KbitPerSecond}, want: "zero-window"},
		{name: "reordering", atob: emulator.Impairment{Delay: 5 * ms, Rate: 50 * mbit, Reorder: 0.05},
			want: "reordering"},
		// A rate limit that drops instead of queueing: cubic loses a tenth
		// of what it sends at the policed rate with the round trip at
		// its minimum.
		{name: "policer", atob: emulator.Impairment{Delay: 10 * ms, Police: &emulator.Policer{Rate: 10 * mbit, Burst: model.MB}},
			test: model.TestConfig{Congestion: "cubic"}, want: "policer", primary: true},
		// A policer slow start outruns: cubic at 40 ms loses a tenth of
		// a second's packets at 50 Mbit/s, and the measured seconds are
		// its window regrowing without loss, not a flat rate.
		{name: "policer outrun", atob: emulator.Impairment{Delay: 20 * ms, Police: &emulator.Policer{Rate: 50 * mbit, Burst: 2 * model.MB}},
			test: model.TestConfig{Congestion: "cubic"}, want: "policer", primary: true, file: "policer.outrun"},
		// Hosts with jumbo frames behind a 1500-byte hop that drops
		// silently: nothing arrives and the server's report never comes;
		// what was delivered is what the sender saw acknowledged.
		{name: "black hole behind jumbo hosts", atob: emulator.Impairment{Delay: 5 * ms, Rate: 50 * mbit, MTU: 1500, BlackHole: true},
			mtu: 9000, want: "pmtu-blackhole", primary: true, file: "pmtu-blackhole.jumbo"},
		// The same seen from the receiving end: the server sends, and its
		// report never comes.
		{name: "black hole behind jumbo hosts, download", atob: emulator.Impairment{Delay: 5 * ms},
			btoa: &emulator.Impairment{Delay: 5 * ms, Rate: 50 * mbit, MTU: 1500, BlackHole: true}, test: model.TestConfig{Reverse: true},
			mtu: 9000, want: "pmtu-blackhole", primary: true, file: "pmtu-blackhole.jumbo-download"},
		// A 128 KiB send buffer on a 50 ms path under cubic, which keeps
		// the kernel's send-buffer chrono near zero: the samples show the
		// buffer full.
		{name: "full send buffer", atob: emulator.Impairment{Delay: 25 * ms},
			a: lab.HostConfig{Wmem: lab.BufferSizes{Min: 4096, Default: 16384, Max: 128 * model.KiB}}, test: model.TestConfig{Congestion: "cubic"},
			want: "sndbuf-limited", primary: true, file: "sndbuf-limited.cubic"},
		// A 64 KiB send buffer under cubic behind a 100 Mbit/s, 20 ms
		// bottleneck: the sender, not paced, lets bursts past its buffer
		// (send queue 190-300 kB), the kernel counts the congestion
		// window as the limit, and the rate is twice what the buffer
		// holds per round trip but half the path's.
		{name: "send buffer overrun", atob: emulator.Impairment{Delay: 10 * ms, Rate: 100 * mbit, Queue: emulator.Queue{Bytes: 250 * model.KB}},
			a: lab.HostConfig{Wmem: lab.BufferSizes{Min: 4096, Default: 16384, Max: 64 * model.KiB}}, test: model.TestConfig{Congestion: "cubic"},
			want: "sndbuf-limited", primary: true, file: "sndbuf-limited.overrun"},
		// A 256 KiB receive buffer and 0.05% loss at 60 ms: the window
		// and the loss bind together, and both are the verdict whichever
		// showed more in a run.
		{name: "window and loss together", atob: emulator.Impairment{Delay: 30 * ms, Loss: 0.0005},
			b: lab.HostConfig{Rmem: lab.BufferSizes{Min: 4096, Default: 131072, Max: 256 * model.KiB}}, test: model.TestConfig{Congestion: "cubic"},
			want: "rwnd-limited", also: []string{"loss-limited"}, primary: true, file: "rwnd-limited.colimit", seed: 5},
	}
	var table []string
	for _, s := range scenarios {
		t.Run(strings.ReplaceAll(s.name, " ", "-"), func(t *testing.T) {
			p := labtest.Pair(t, s.pair())
			addr, stop, err := experiment.Serve(t.Context(), p, 0, "test")
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
				file := s.file
				if file == "" {
					file = s.want
				}
				if err := os.WriteFile(filepath.Join(recordingsDir, file+".json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fs := diagnose.Test(run, diagnose.Options{})
			ids := make([]string, len(fs))
			for i, f := range fs {
				ids[i] = f.ID
			}
			ok, why := verdictOK(s, fs)
			verdict := "ok"
			if !ok {
				verdict = "FAILED"
				for _, f := range fs {
					t.Logf("%s: %s", f.ID, f.Summary)
					for _, e := range f.Evidence {
						t.Logf("    %s: %s", e.What, e.Value)
					}
				}
				t.Errorf("%s: findings %v, want %s %s: %s", s.name, ids, s.want, map[bool]string{true: "first", false: "named"}[s.primary], why)
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
