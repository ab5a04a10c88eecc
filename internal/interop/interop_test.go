package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The CI tier of the differential harness: every mode, both ways, three
// rounds (the reference once, where a check needs it), and every
// refusal. Loopback only; about four minutes, so not under -short.
func TestAgainstStockIperf3(t *testing.T) {
	h := harness(t)
	cases := Cases()
	var failed []string
	m := h.Matrix(t.Context(), cases, 3, 0, func(r Result, bad []string) {
		if len(bad) > 0 && r.Way != Reference {
			failed = append(failed, r.Case+", "+string(r.Way)+": "+strings.Join(bad, "; "))
		}
	})
	var table strings.Builder
	WriteTable(&table, cases, m)
	t.Logf("\n%s", table.String())
	for _, f := range failed {
		t.Error(f)
	}
	for _, rf := range Refusals() {
		rr, err := h.Refuse(t.Context(), rf)
		if err != nil {
			t.Errorf("%s: %v", rf.Name, err)
			continue
		}
		for _, b := range CheckRefusal(rf, rr) {
			t.Errorf("%s: %s", rf.Name, b)
		}
	}
}

// harness builds tcpscope and starts the servers, or skips: under
// -short, or without a stock iperf3.
func harness(t *testing.T) *Harness {
	t.Helper()
	if testing.Short() {
		t.Skip("the interop tier runs real tests for minutes; not under -short")
	}
	iperf3, err := exec.LookPath("iperf3")
	if err != nil {
		t.Skip("no stock iperf3 on PATH (make setup installs it)")
	}
	bin := filepath.Join(t.TempDir(), "tcpscope")
	build := exec.Command("go", "build", "-o", bin, "github.com/tcpscope/tcpscope/cmd/tcpscope")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build tcpscope: %v\n%s", err, out)
	}
	h := &Harness{Tcpscope: bin, Iperf3: iperf3}
	if err := h.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}
