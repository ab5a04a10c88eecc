package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// A result saved with --json diagnoses offline to the same findings the
// test printed; broken input gets one line and exit 2.
func TestExplainSavedResult(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
	code, out, errOut := run("test", addr, "-t", "0.5", "--json")
	if code != 0 {
		t.Fatalf("test: exit %d: %s", code, errOut)
	}
	var run1 model.Run
	if err := json.Unmarshal([]byte(out), &run1); err != nil || len(run1.Diagnosis) == 0 || !run1.Diagnosis[0].Primary {
		t.Fatalf("test --json has no diagnosis: %v", err)
	}
	file := filepath.Join(t.TempDir(), "run.json")
	os.WriteFile(file, []byte(out), 0o644)
	code, out, errOut = runExplain(t, file, "--json")
	var ex diagnose.Explanation
	if code != 0 || json.Unmarshal([]byte(out), &ex) != nil || ex.Schema != diagnose.ExplanationSchema {
		t.Fatalf("explain --json: exit %d, %s %s", code, out, errOut)
	}
	fs := ex.Findings
	if len(fs) != len(run1.Diagnosis) || fs[0].ID != run1.Diagnosis[0].ID || fs[0].Summary != run1.Diagnosis[0].Summary {
		t.Errorf("explain found %v, the test %v", fs, run1.Diagnosis)
	}
	if code, out, _ := runExplain(t, file); code != 0 || !strings.HasPrefix(out, "diagnosis:\n  what limits this transfer: ") {
		t.Errorf("explain text: exit %d, %q", code, out)
	}
	// --no-diagnose leaves it out.
	if _, out, _ := run("test", addr, "-t", "0.3", "--json", "--no-diagnose"); strings.Contains(out, `"diagnosis"`) {
		t.Error("--no-diagnose still diagnosed")
	}
	notJSON := filepath.Join(t.TempDir(), "x")
	os.WriteFile(notJSON, []byte("hello"), 0o644)
	otherSchema := filepath.Join(t.TempDir(), "y")
	os.WriteFile(otherSchema, []byte(`{"schema":"other/1"}`), 0o644)
	for _, f := range []string{notJSON, otherSchema, filepath.Join(t.TempDir(), "missing")} {
		code, _, errOut := runExplain(t, f)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("explain %s: exit %d, %q; want 2 and one line", f, code, errOut)
		}
	}
}

func runExplain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return run(append([]string{"explain"}, args...)...)
}

// `tcpscope host` on a recorded tree: findings, the snippet, --write.
func TestHostCommand(t *testing.T) {
	root := filepath.Join("..", "hostinfo", "testdata", "mistuned")
	conf := filepath.Join(t.TempDir(), "90-tcpscope.conf")
	code, out, errOut := run("host", "--root", root, "--target-rate", "100M", "--rtt", "80ms", "--write", conf)
	if code != 0 {
		t.Fatalf("host: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"critical: host-rmem-small", "critical: host-wscale-off", "sysctl.conf:", "net.ipv4.tcp_window_scaling = 1", "written to " + conf} {
		if !strings.Contains(out, want) {
			t.Errorf("host output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(conf)
	if err != nil || !strings.Contains(string(b), "net.ipv4.tcp_rmem = 4096 87380 2000000") {
		t.Errorf("--write: %v\n%s", err, b)
	}
	code, out, _ = run("host", "--root", root, "--json")
	var res struct {
		Host     model.HostInfo  `json:"host"`
		Findings []model.Finding `json:"findings"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Findings) == 0 || res.Host.Kernel != "5.4.0-mistuned" {
		t.Errorf("host --json: exit %d, %.200s", code, out)
	}
	if code, _, _ := run("host", "--root", t.TempDir()); code == 0 {
		t.Error("host on an empty tree succeeded")
	}
}

// --format iperf3-json writes iperf3's -J shape, which iperf3 parsers read:
// the sums agree with the per-stream halves.
func TestIperf3JSONFormat(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
	code, out, errOut := run("test", addr, "-t", "0.5", "-P", "2", "--format", "iperf3-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Start struct {
			TestStart struct {
				NumStreams int    `json:"num_streams"`
				Protocol   string `json:"protocol"`
			} `json:"test_start"`
		} `json:"start"`
		Intervals []struct {
			Sum struct {
				Bytes float64 `json:"bytes"`
			} `json:"sum"`
		} `json:"intervals"`
		End struct {
			Streams []struct {
				Receiver struct {
					Bytes float64 `json:"bytes"`
				} `json:"receiver"`
			} `json:"streams"`
			SumReceived struct {
				Bytes         float64 `json:"bytes"`
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var perStream float64
	for _, s := range doc.End.Streams {
		perStream += s.Receiver.Bytes
	}
	if doc.Start.TestStart.NumStreams != 2 || doc.Start.TestStart.Protocol != "TCP" || len(doc.Intervals) == 0 ||
		doc.End.SumReceived.Bytes <= 0 || doc.End.SumReceived.Bytes != perStream || doc.End.SumReceived.BitsPerSecond <= 0 {
		t.Errorf("iperf3-json document: %+v", doc)
	}
	if code, _, _ := run("test", addr, "-t", "0.2", "--format", "iperf3-json", "--json"); code != 2 {
		t.Error("iperf3-json with --json accepted")
	}
}
