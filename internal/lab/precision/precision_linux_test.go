package precision

import (
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/lab/labtest"
)

// The diagnosis on real kernels, each scenario once (docs/DIAGNOSES.md
// has five runs of each, and the healthy paths under all three
// congestion controls): no false alarm on a healthy path, and every
// impairment's cause in the verdict, except the misses a scenario's
// Known documents.
func TestSuites(t *testing.T) {
	if testing.Short() {
		t.Skip("the precision suites build lab paths for minutes; not under -short")
	}
	labtest.Require(t)
	for _, suite := range []struct {
		name      string
		scenarios []Scenario
	}{{"healthy", HealthyOnce()}, {"impairments", Impairments()}} {
		t.Run(suite.name, func(t *testing.T) {
			known := map[string]string{}
			for _, s := range suite.scenarios {
				known[s.Name] = s.Known
			}
			out := Run(t.Context(), suite.scenarios, 1, func(o Outcome) {
				switch {
				case o.Err != nil:
					t.Errorf("%s: %v", o.Scenario, o.Err)
				case !o.OK && known[o.Scenario] != "":
					t.Logf("%s: verdict %v, alarms %v, goodput %v: a known miss (%s)", o.Scenario, o.Verdict, o.Alarms, o.Goodput, known[o.Scenario])
				case !o.OK:
					t.Errorf("%s: verdict %v, alarms %v, goodput %v", o.Scenario, o.Verdict, o.Alarms, o.Goodput)
				}
			})
			var b strings.Builder
			Table(&b, suite.scenarios, out)
			t.Logf("\n%s", b.String())
		})
	}
}
