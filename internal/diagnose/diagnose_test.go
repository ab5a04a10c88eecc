package diagnose

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

var update = flag.Bool("update", false, "rewrite the golden findings")

// TestRecorded diagnoses runs recorded in the lab (testdata/ID.json, by
// TestScenarios -record) and compares the findings with
// testdata/ID.golden.json; -update rewrites them. Each recording is named
// after the finding it must produce.
func TestRecorded(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var run model.Run
			if err := json.Unmarshal(b, &run); err != nil {
				t.Fatal(err)
			}
			got := Test(&run, Options{})
			if !slices.ContainsFunc(got, func(f model.Finding) bool { return f.ID == name }) {
				t.Errorf("findings %v, want %s among them", ids(got), name)
			}
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(f, ".json") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, append(out, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if strings.TrimSpace(string(want)) != strings.TrimSpace(string(out)) {
				t.Errorf("findings differ from %s (-update rewrites it):\n%s", golden, out)
			}
		})
	}
	if n == 0 {
		t.Fatal("no recorded runs in testdata")
	}
}

func TestTargetSizesTheFix(t *testing.T) {
	b, err := os.ReadFile("testdata/wscale-off.json")
	if err != nil {
		t.Fatal(err)
	}
	var run model.Run
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	f := Test(&run, Options{Target: 100 * model.MbitPerSecond})[0]
	if p, ok := f.Predicted.Get(); !ok || p != 100*model.MbitPerSecond {
		t.Errorf("with a 100 Mbit/s target the prediction is %v", f.Predicted)
	}
	// Without window scaling the fix is the sysctl, whatever the target.
	if len(f.Fix) == 0 || !strings.Contains(f.Fix[0].Command, "tcp_window_scaling=1") {
		t.Errorf("fix %+v", f.Fix)
	}
}
