package precision

import (
	"io"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
)

// The diagnosis on real kernels, each scenario once (docs/DIAGNOSES.md
// has five runs of each, and the healthy paths under all three
// congestion controls): no false alarm on a healthy path, and every
// impairment's cause in the verdict, except the misses a scenario's
// Known documents.
func TestSuites(t *testing.T) {
	if testing.Short() {
		t.Skip("namespace test: needs root and network namespaces, and builds lab paths for minutes; skipped with -short")
	}
	labtest.Require(t)
	for _, suite := range []struct {
		name      string
		scenarios []Scenario
	}{{"healthy", HealthyOnce()}, {"impairments", Impairments()}} {
		t.Run(suite.name, func(t *testing.T) { runSuite(t, suite.scenarios, Table) })
	}
}

// CI's fixed draws of the randomised suite, on both path emulators (the
// rules were tuned on these seeds' draws: this is the regression check;
// bench/precision.sh measures on a held-out seed). Draw i of a seed is
// the same on every machine, so a miss here is reproduced with
// tcpscope lab [--backend kernel] precision --suite random --seed 11
// --count 10 --only "r11#i:".
func TestRandomSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("namespace test: needs root and network namespaces, and builds lab paths for minutes; skipped with -short")
	}
	labtest.Require(t)
	t.Run("emulator", func(t *testing.T) { runSuite(t, Random(11, 10, lab.UseEmulator), RandomTable) })
	t.Run("kernel", func(t *testing.T) { runSuite(t, Random(11, 6, lab.UseKernel), RandomTable) })
}

// runSuite runs each scenario once and fails on a miss that repeats.
func runSuite(t *testing.T, scenarios []Scenario, table func(io.Writer, []Scenario, []Outcome)) {
	byName := map[string]Scenario{}
	for _, s := range scenarios {
		byName[s.Name] = s
	}
	out := Run(t.Context(), scenarios, 1, func(o Outcome) {
		s := byName[o.Scenario]
		switch {
		case o.Err != nil:
			t.Errorf("%s: %v", o.Scenario, o.Err)
		case !o.OK && s.Known != "":
			t.Logf("%s: verdict %v, alarms %v, goodput %v: a known miss (%s)", o.Scenario, o.Verdict, o.Alarms, o.Goodput, s.Known)
		case !o.OK:
			// Once more before it fails: the lab's path is a
			// userspace emulator, and a CI machine busy with other
			// test binaries can delay it enough to stand a queue the
			// path does not have (a policer read as a bottleneck once
			// in a CI run, never alone or beside a CPU hog in 12
			// runs). Two misses in a row fail; the first is in the log
			// either way.
			t.Logf("%s: missed once: verdict %v, alarms %v, goodput %v, fix problems %v: %s", o.Scenario, o.Verdict, o.Alarms, o.Goodput, o.FixProblems, o.Detail)
			again := Run(t.Context(), []Scenario{s}, 1, nil)
			if len(again) == 1 && again[0].OK {
				t.Logf("%s: right when run again (verdict %v)", o.Scenario, again[0].Verdict)
				return
			}
			for _, a := range again {
				t.Errorf("%s: missed twice: verdict %v, alarms %v, goodput %v, fix problems %v: %s", o.Scenario, a.Verdict, a.Alarms, a.Goodput, a.FixProblems, a.Detail)
			}
		}
	})
	var b strings.Builder
	table(&b, scenarios, out)
	t.Logf("\n%s", b.String())
}
