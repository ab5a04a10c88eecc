package interop

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The CI tier of the differential harness: every mode, both ways, three
// rounds (the reference once, where a check needs it), and every
// refusal. Loopback only; about four minutes, so not under -short.
//
// A case that misses in a round is run again, three rounds of the same
// way, and fails the test only if it misses again: a stock server counts
// only what its application read by TEST_END (esnet/iperf#382), and one
// descheduled past tcpscope's bounded wait for it on a loaded CI machine
// (once in about twelve runs) is the machine's noise, not a wrong count.
// Both misses are logged.
func TestAgainstStockIperf3(t *testing.T) {
	h := harness(t)
	cases := Cases()
	type miss struct {
		c   Case
		way Way
	}
	var first []string
	var missed []miss
	seen := map[string]bool{}
	m := h.Matrix(t.Context(), cases, 3, 0, func(r Result, bad []string) {
		if len(bad) > 0 && r.Way != Reference {
			first = append(first, r.Case+", "+string(r.Way)+": "+strings.Join(bad, "; "))
			if key := r.Case + "|" + string(r.Way); !seen[key] {
				seen[key] = true
				for _, c := range cases {
					if c.Name == r.Case {
						missed = append(missed, miss{c, r.Way})
					}
				}
			}
		}
	})
	var table strings.Builder
	WriteTable(&table, cases, m)
	table.WriteString("\n")
	WriteCostTable(&table, cases, m)
	t.Logf("\n%s", table.String())
	for _, f := range first {
		t.Logf("missed: %s", f)
	}
	for _, ms := range missed {
		h.MatrixOf(t.Context(), []Case{ms.c}, []Way{ms.way}, 3, 0, func(r Result, bad []string) {
			if len(bad) > 0 {
				t.Errorf("%s, %s, again on a re-run: %s", r.Case, r.Way, strings.Join(bad, "; "))
			}
		})
	}
	for _, rf := range Refusals() {
		rr, err := h.Refuse(t.Context(), rf)
		if err != nil {
			t.Logf("%s: %v; once more", rf.Name, err)
			rr, err = h.Refuse(t.Context(), rf)
		}
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

// Stock iperf3 3.12's server keeps a client's -C for the tests after it
// (esnet/iperf#1812, fixed upstream in January 2025): the harness gives the next run a
// fresh server, or every reference after a -C case is a test of that
// algorithm rather than of the host's default.
func TestStockServerFreshAfterCongestion(t *testing.T) {
	def, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil || strings.TrimSpace(string(def)) == "cubic" {
		t.Skip("needs a default congestion control other than cubic")
	}
	h := harness(t)
	r := h.Run(t.Context(), Case{Name: "-C cubic", Args: []string{"-t", "1", "-C", "cubic"}}, Reference)
	if r[0].Harness != nil || r[0].Exit != 0 {
		t.Fatalf("the -C cubic run: exit %d, %v, %s", r[0].Exit, r[0].Harness, r[0].Stderr)
	}
	out, err := exec.Command(h.Iperf3, "-c", "127.0.0.1", "-p", strconv.Itoa(h.ports["iperf3127.0.0.1"]), "-t", "1", "-R", "-J").Output()
	if err != nil {
		t.Fatalf("the next run: %v: %s", err, out)
	}
	var doc struct {
		End struct {
			Sender string `json:"sender_tcp_congestion"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(def)); doc.End.Sender != want {
		t.Fatalf("the server sent the next test with %q, not the host's %q", doc.End.Sender, want)
	}
}
