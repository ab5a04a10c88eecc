package diagnose_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
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
	"github.com/tcpscope/tcpscope/internal/tcpmath"
)

var (
	healthyRuns = flag.Int("healthy", 0, "TestHealthy: run every healthy path and congestion control this many times (0 skips it; bench/healthy.sh runs it)")
	healthyKeep = flag.String("healthy-keep", "", "TestHealthy: write the runs not diagnosed healthy to this directory, as tcpscope test --json")
)

// healthyPath is a path with nothing wrong: a bottleneck with a queue of
// one bandwidth-delay product (the classic sizing for one flow: full use
// without a standing queue of more than a round trip), and at least 2 ms
// of the rate (a sender's TSO bursts are about 1 ms of its rate: a LAN's
// 25 kB BDP would drop them), between hosts whose buffers hold twice the
// BDP.
type healthyPath struct {
	name string
	rate model.Bitrate
	rtt  time.Duration
}

func (p healthyPath) pair() lab.PairConfig {
	bdp := tcpmath.BDP(p.rate, p.rtt)
	queue := max(bdp, tcpmath.BDP(p.rate, 2*time.Millisecond), emulator.DefaultQueueMinPackets*1500)
	dir := emulator.Direction{Delay: p.rtt / 2, Rate: p.rate, Queue: emulator.Queue{Bytes: queue}}
	buf := max(2*bdp, 6*model.MiB) // the lab's "tuned" hosts
	host := lab.HostConfig{Rmem: lab.BufferSizes{Min: 4096, Default: 128 * model.KiB, Max: buf},
		Wmem: lab.BufferSizes{Min: 4096, Default: 16 * model.KiB, Max: buf}}
	return lab.PairConfig{Emulated: &emulator.Config{AtoB: dir, BtoA: emulator.Direction{Delay: p.rtt / 2}}, A: host, B: host, Backend: lab.UseEmulator}
}

// healthyOK reports whether a healthy transfer's diagnosis says so: its
// verdict is the bottleneck (the path is the limit) and nothing of
// warning or critical severity stands.
func healthyOK(fs []model.Finding) (bool, string) {
	if len(fs) == 0 || fs[0].ID != "bottleneck" {
		return false, "verdict not bottleneck"
	}
	for _, f := range fs {
		if f.Severity != model.Info {
			return false, fmt.Sprintf("%s [%s]: %s", f.ID, f.Severity, f.Summary)
		}
	}
	return true, ""
}

// healthyRow is one line of the suite's table.
type healthyRow struct {
	path, cc        string
	runs, ok        int
	primaries, also map[string]int
	goodput         []model.Bitrate
}

func (r *healthyRow) add(fs []model.Finding, goodput model.Bitrate, t *testing.T) {
	r.runs++
	r.goodput = append(r.goodput, goodput)
	for _, f := range fs {
		if f.Primary {
			r.primaries[f.ID]++
		} else if f.Severity != model.Info {
			r.also[f.ID]++
		}
	}
	if ok, why := healthyOK(fs); ok {
		r.ok++
	} else {
		t.Errorf("%s, %s: %s", r.path, r.cc, why)
	}
}

func (r *healthyRow) String() string {
	count := func(m map[string]int) string {
		var s []string
		for id, n := range m {
			s = append(s, fmt.Sprintf("%s×%d", id, n))
		}
		slices.Sort(s)
		if len(s) == 0 {
			return "-"
		}
		return strings.Join(s, " ")
	}
	lo, hi := slices.Min(r.goodput), slices.Max(r.goodput)
	return fmt.Sprintf("%-22s %-6s %d/%d  %-26s %-30s %s–%s", r.path, r.cc, r.ok, r.runs, count(r.primaries), count(r.also), lo, hi)
}

// TestHealthy is the healthy suite: tuned hosts across paths from a LAN
// to 150 ms and 10 Mbit/s to 1 Gbit/s, under bbr, cubic and reno, and
// loopback, each tested -healthy times. A healthy transfer's verdict is
// the bottleneck, and no warning or critical finding stands. The table
// (path, congestion control, healthy runs, verdicts, findings of warning
// or worse, goodput range) is logged; docs/DIAGNOSES.md quotes it.
func TestHealthy(t *testing.T) {
	if *healthyRuns <= 0 {
		t.Skip("the healthy suite runs with -healthy N (bench/healthy.sh)")
	}
	const mbit = model.MbitPerSecond
	ms := time.Millisecond
	paths := []healthyPath{
		{"LAN 1G 0.2ms", model.GbitPerSecond, 200 * time.Microsecond},
		{"metro 1G 2ms", model.GbitPerSecond, 2 * ms},
		{"national 1G 21ms", model.GbitPerSecond, 21 * ms},
		{"100M 10ms", 100 * mbit, 10 * ms},
		{"100M 40ms", 100 * mbit, 40 * ms},
		{"transatlantic 100M 150ms", 100 * mbit, 150 * ms},
		{"10M 20ms", 10 * mbit, 20 * ms},
		{"10M 150ms", 10 * mbit, 150 * ms},
	}
	ccs := []string{"bbr", "cubic", "reno"}
	var rows []*healthyRow
	test := func(t *testing.T, row *healthyRow, do func(func() error) error, addr string) {
		for range *healthyRuns {
			cfg := model.TestConfig{Duration: 4 * time.Second, Omit: time.Second, Congestion: row.cc}
			var run *model.Run
			err := do(func() error {
				var err error
				run, err = (&perf.Client{Version: "test"}).Run(t.Context(), addr, cfg)
				return err
			})
			if err != nil {
				t.Fatalf("%s, %s: %v", row.path, row.cc, err)
			}
			fs := diagnose.Test(run, diagnose.Options{})
			if ok, _ := healthyOK(fs); !ok && *healthyKeep != "" {
				b, err := json.MarshalIndent(run, "", " ")
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%s-%s-%d.json", strings.ReplaceAll(row.path, " ", "-"), row.cc, row.runs)
				if err := os.WriteFile(filepath.Join(*healthyKeep, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			row.add(fs, run.Summary[0].Goodput.V, t)
		}
	}
	for _, p := range paths {
		t.Run(strings.ReplaceAll(p.name, " ", "-"), func(t *testing.T) {
			labtest.Require(t)
			pair := labtest.Pair(t, p.pair())
			addr, stop, err := pair.Serve(t.Context(), 0, "test")
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			for _, cc := range ccs {
				row := &healthyRow{path: p.name, cc: cc, primaries: map[string]int{}, also: map[string]int{}}
				rows = append(rows, row)
				test(t, row, pair.A.Do, addr)
			}
		})
	}
	t.Run("loopback", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- (&perf.Server{Version: "test"}).Serve(ctx, ln) }()
		defer func() {
			cancel()
			if err := <-served; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
				t.Errorf("server: %v", err)
			}
		}()
		for _, cc := range ccs {
			row := &healthyRow{path: "loopback", cc: cc, primaries: map[string]int{}, also: map[string]int{}}
			rows = append(rows, row)
			test(t, row, func(f func() error) error { return f() }, ln.Addr().String())
		}
	})
	var table []string
	for _, r := range rows {
		table = append(table, r.String())
	}
	t.Logf("healthy suite, %d runs each: path, congestion control, healthy runs, verdicts, warnings or worse, goodput\n%s",
		*healthyRuns, strings.Join(table, "\n"))
}
