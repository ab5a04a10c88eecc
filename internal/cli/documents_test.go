package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/tcpmath"
)

// The JSON documents of calc, host and explain keep their shape: calc's
// exactly, host's through its type (every field read back and written
// again to the same bytes), explain's as the diagnosis goldens.
func TestJSONDocuments(t *testing.T) {
	code, out, errOut := run("calc", "bdp", "--rate", "1G", "--rtt", "21ms", "--json")
	want := `{
  "schema": "tcpscope.calc/1",
  "calc": "bdp",
  "inputs": {
    "rate_bps": 1000000000,
    "rtt_s": 0.021
  },
  "results": {
    "bdp_bytes": 2625000,
    "buffer_bytes": 5250000
  }
}
`
	if code != 0 || out != want {
		t.Errorf("calc bdp --json: exit %d (%s):\n%s\nwant\n%s", code, errOut, out, want)
	}
	var calc tcpmath.Calculation
	if err := strict(out, &calc); err != nil || calc.Schema != tcpmath.CalculationSchema {
		t.Errorf("calc bdp --json does not read back: %v", err)
	}

	code, out, errOut = run("host", "--root", filepath.Join("..", "hostinfo", "testdata", "mistuned"), "--target-rate", "100M", "--json")
	var audit diagnose.HostAudit
	if err := strict(out, &audit); code != 0 || err != nil || audit.Schema != diagnose.HostAuditSchema || len(audit.Findings) == 0 {
		t.Fatalf("host --json: exit %d, %v (%s): %.300s", code, err, errOut, out)
	}
	if again, _ := json.MarshalIndent(audit, "", "  "); string(again)+"\n" != out {
		t.Errorf("host --json is not what its type writes:\n%s", out)
	}

	// explain --json carries the diagnosis: the list of findings the
	// diagnose package's goldens hold for the same recorded run.
	for _, name := range []string{"bottleneck", "loss-limited", "pmtu-blackhole"} {
		rec := filepath.Join("..", "diagnose", "testdata", name)
		code, out, errOut = run("explain", rec+".json", "--json")
		golden, err := os.ReadFile(rec + ".golden.json")
		if err != nil {
			t.Fatal(err)
		}
		var ex diagnose.Explanation
		if err := strict(out, &ex); code != 0 || err != nil || ex.Schema != diagnose.ExplanationSchema {
			t.Fatalf("explain %s --json: exit %d, %v (%s): %.300s", name, code, err, errOut, out)
		}
		findings, _ := json.MarshalIndent(ex.Findings, "", "  ")
		if !bytes.Equal(append(findings, '\n'), golden) {
			t.Errorf("explain %s --json: its findings differ from %s.golden.json:\n%.500s", name, rec, findings)
		}
	}
}

// strict reads a document into v, refusing fields v's type lacks.
func strict(doc string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
