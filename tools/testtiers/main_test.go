package main

import (
	"os"
	"strings"
	"testing"
)

// Recorded events render as plain go test prints them (build errors,
// failing tests' output, each package's ok or FAIL line; no -v framing,
// no passing or skipped tests' logs), and the skips make one line grouped
// by reason, most first.
func TestRenderAndSummary(t *testing.T) {
	f, err := os.Open("testdata/events.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	r := newRenderer(&out)
	if err := r.read(f); err != nil {
		t.Fatal(err)
	}
	want := `# github.com/tcpscope/tcpscope/internal/bad
internal/bad/bad.go:1:25: undefined: y
FAIL	github.com/tcpscope/tcpscope/internal/bad [build failed]
ok  	github.com/tcpscope/tcpscope/internal/lab	0.010s
    perf_test.go:20: rate 0 bit/s, want more
--- FAIL: TestRates (0.50s)
panic: test timed out after 15m0s
FAIL	github.com/tcpscope/tcpscope/internal/perf	900.1s
`
	if out.String() != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", out.String(), want)
	}
	sum := r.summary("bin/test.json")
	wantSum := "testtiers: 3 tests skipped (each in bin/test.json): 2 in internal/lab, internal/perf: lab: needs root (CAP_NET_ADMIN); 1 in internal/perf: iperf3 not installed"
	if sum != wantSum {
		t.Errorf("summary:\n%s\nwant:\n%s", sum, wantSum)
	}
	if strings.Contains(sum, "\n") {
		t.Error("the summary is more than one line")
	}
	if got := newRenderer(&out).summary(""); got != "testtiers: every tier ran, no test skipped" {
		t.Errorf("no skips: %q", got)
	}
}
