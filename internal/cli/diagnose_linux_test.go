package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
)

// TestDiagnoseLab runs `tcpscope diagnose` end to end from host A of a lab
// path with window scaling off in both hosts: the audit reads A's own
// sysctls, the probe finds the path's 20 ms, and both directions are
// named window-limited.
func TestDiagnoseLab(t *testing.T) {
	labtest.Require(t)
	dir := emulator.Direction{Delay: 10 * time.Millisecond, Rate: 100e6}
	host := lab.HostConfig{WindowScaling: lab.Off}
	p := labtest.Pair(t, lab.PairConfig{Emulated: &emulator.Config{AtoB: dir, BtoA: dir}, A: host, B: host, Backend: lab.UseEmulator})
	addr, stop, err := p.Serve(t.Context(), 0, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var code int
	var out, errOut string
	err = p.A.Do(func() error {
		code, out, errOut = run("diagnose", addr, "-t", "2", "--json")
		return nil
	})
	if err != nil || code != 0 {
		t.Fatalf("diagnose: exit %d, %v: %s", code, err, errOut)
	}
	var res diagnoseResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("path %+v, limits %+v, took %v", res.Path, res.Limits, res.Took)
	if rtt := res.Path.RTTMin; rtt < 20*time.Millisecond || rtt > 21*time.Millisecond {
		t.Errorf("probe RTT %v across 2 × 10 ms", rtt)
	}
	if res.Path.PMTU != 1500 || res.Path.MSS <= 0 {
		t.Errorf("path facts %+v", res.Path)
	}
	if len(res.Limits) != 2 || res.Limits[0].Finding != "wscale-off" || res.Limits[1].Finding != "wscale-off" {
		t.Errorf("limits %+v, want wscale-off both ways", res.Limits)
	}
	var got []string
	for _, f := range res.Findings {
		got = append(got, f.ID)
	}
	if !slices.Contains(got, "host-wscale-off") {
		t.Errorf("the audit of host A missed its window scaling: %v", got)
	}
	if res.Host.Sysctls["net.ipv4.tcp_window_scaling"] != "0" {
		t.Errorf("audit read %q for A's tcp_window_scaling", res.Host.Sysctls["net.ipv4.tcp_window_scaling"])
	}
	// Layer order: host findings before transport ones.
	first := slices.IndexFunc(res.Findings, func(f model.Finding) bool { return f.Layer == "transport" })
	last := slices.IndexFunc(res.Findings, func(f model.Finding) bool { return strings.HasPrefix(f.ID, "host-") && f.Layer == "host" })
	if first >= 0 && last > first {
		t.Errorf("findings not in layer order: %v", got)
	}
}
