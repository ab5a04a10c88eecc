package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/golden"
	"github.com/tcpscope/tcpscope/internal/serve"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/report"
)

// explainGolden compares got with testdata/name (-update rewrites it).
func explainGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

// Stock iperf3 3.12 -J documents (recorded on loopback: the client's of
// TCP, TCP -b, -R, UDP and --bidir tests, the server's of TCP and -R, a client
// stopped by Ctrl-C;
// internal/iperf3's TestRecordStockJSON re-records them)
// explained: golden text and JSON. What the document lacks is said, and
// a TCP run whose kernels are not in it is never called healthy.
func TestExplainStockIperf3(t *testing.T) {
	for _, name := range []string{"tcp", "tcp-paced", "reverse", "udp", "bidir", "server-tcp", "server-reverse", "interrupted"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("..", "iperf3", "testdata", "stock", name+".json")
			code, out, errOut := runExplain(t, file, "-V")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.HasPrefix(out, "read: iperf3 -J (iperf 3.12, the ") || !strings.Contains(out, "not in this result:\n  - ") {
				t.Errorf("explain does not say what it read and what it lacks:\n%s", out)
			}
			explainGolden(t, filepath.Join("explain", name+".txt"), []byte(out))
			code, out, _ = runExplain(t, file, "--json")
			var ex diagnose.Explanation
			if code != 0 || json.Unmarshal([]byte(out), &ex) != nil || ex.Input == "" || len(ex.Lacks) == 0 || len(ex.Findings) == 0 {
				t.Fatalf("explain --json: exit %d: %.300s", code, out)
			}
			for _, f := range ex.Findings {
				if !f.Primary {
					continue
				}
				// -b is judged from bytes alone: the rate asked for was
				// reached.
				if want := map[string]string{"udp": "udp-clean", "tcp-paced": "sender-app-limited"}[name]; want != "" && f.ID != want || want == "" && f.ID != "not-judged" {
					t.Errorf("%s: the verdict is %s; neither kernel is in the document", f.Direction, f.ID)
				}
				if f.ID == "bottleneck" || strings.Contains(f.Summary, "healthy") {
					t.Errorf("%s called healthy: %s", f.Direction, f.Summary)
				}
			}
			explainGolden(t, filepath.Join("explain", name+".json"), []byte(out))
		})
	}
}

// Each format a real loopback test writes is explained end to end: its
// --json and --json-stream to the diagnosis the test itself made, and
// -f iperf3-json to what that shape carries.
func TestExplainEveryFormat(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
	dir := t.TempDir()
	save := func(name string, args ...string) string {
		t.Helper()
		code, out, errOut := run(append([]string{"test", addr, "-t", "0.5", "-i", "0.1"}, args...)...)
		if code != 0 {
			t.Fatalf("test %v: exit %d: %s", args, code, errOut)
		}
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
	explain := func(name string) diagnose.Explanation {
		t.Helper()
		code, out, errOut := runExplain(t, filepath.Join(dir, name), "--json")
		var ex diagnose.Explanation
		if code != 0 || json.Unmarshal([]byte(out), &ex) != nil || len(ex.Findings) == 0 {
			t.Fatalf("explain %s: exit %d: %s %.300s", name, code, errOut, out)
		}
		return ex
	}
	same := func(what string, got, want []model.Finding) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: explain found %d findings, the test %d", what, len(got), len(want))
		}
		for i := range got {
			if got[i].ID != want[i].ID || got[i].Summary != want[i].Summary {
				t.Errorf("%s: explain found %s %q, the test %s %q", what, got[i].ID, got[i].Summary, want[i].ID, want[i].Summary)
			}
		}
	}

	var doc model.Run
	json.Unmarshal([]byte(save("run.json", "--json")), &doc)
	ex := explain("run.json")
	same("--json", ex.Findings, doc.Diagnosis)
	if ex.Input != "" || len(ex.Lacks) != 0 {
		t.Errorf("--json: input %q, lacks %q; it lacks nothing", ex.Input, ex.Lacks)
	}

	// The stream's end event carries the test's own diagnosis; explain
	// rebuilds the run from the events and finds the same.
	stream := save("run.jsonl", "--json-stream", "-R")
	var end *model.Run
	sc := bufio.NewScanner(strings.NewReader(stream))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e report.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == "end" {
			end = e.Run
		}
	}
	if end == nil || len(end.Diagnosis) == 0 {
		t.Fatal("the stream has no end event with a diagnosis")
	}
	ex = explain("run.jsonl")
	same("--json-stream", ex.Findings, end.Diagnosis)
	if ex.Input != "tcpscope --json-stream" {
		t.Errorf("--json-stream read as %q", ex.Input)
	}
	if code, out, _ := runExplain(t, filepath.Join(dir, "run.jsonl")); code != 0 || !strings.HasPrefix(out, "read: tcpscope --json-stream: TCP, 1 stream, reverse, 500ms\n\ndiagnosis:\n") {
		t.Errorf("explain of the stream: exit %d:\n%s", code, out)
	}

	// iperf3's shape keeps no kernel state: not judged, and said why.
	save("run.iperf3.json", "-f", "iperf3-json")
	ex = explain("run.iperf3.json")
	if !strings.HasPrefix(ex.Input, "iperf3 -J (tcpscope ") || len(ex.Lacks) < 2 || ex.Findings[0].ID != "not-judged" {
		t.Errorf("-f iperf3-json: input %q, lacks %q, verdict %s", ex.Input, ex.Lacks, ex.Findings[0].ID)
	}
}

// Input explain cannot read gets one line, a hint and exit status 2,
// with no Go type or decoder names: text, JSON of another kind, a
// truncated document, a stream cut before its end, an iperf3 test that
// failed.
func TestExplainRefusesOtherInput(t *testing.T) {
	dir := t.TempDir()
	stock, err := os.ReadFile(filepath.Join("..", "iperf3", "testdata", "stock", "tcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{
		"garbage":        "hello, world\n",
		"empty":          "",
		"other-document": `{"name":"not a result","items":[1,2]}`,
		"array":          `[1,2,3]`,
		"other-schema":   `{"schema":"tcpscope.lab/1"}`,
		"wrong-types":    `{"schema":"tcpscope.test/1","start":5,"summary":"x"}`,
		"iperf3-types":   `{"start":{"test_start":"TCP"},"end":{}}`,
		"iperf3-failed":  `{"start":{},"intervals":[],"end":{},"error":"unable to connect to server: Connection refused"}`,
		"truncated":      string(stock[:len(stock)/2]),
		"stream-cut":     `{"schema":"tcpscope.test/1","event":"begin","run":{"schema":"tcpscope.test/1"}}` + "\n",
		"stream-failed":  `{"schema":"tcpscope.test/1","event":"error","error":{"code":"refused","message":"connection refused"}}` + "\n",
		"stream-garbage": `{"schema":"tcpscope.test/1","event":"begin"}` + "\nhello\n",
	}
	for name, in := range inputs {
		file := filepath.Join(dir, name)
		os.WriteFile(file, []byte(in), 0o644)
		code, out, errOut := runExplain(t, file)
		line := strings.TrimSpace(errOut)
		if code != 2 || out != "" || strings.Contains(line, "\n") || !strings.Contains(line, "(try: ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and one line with a hint", name, code, out, errOut)
		}
		for _, leak := range []string{"Go ", "model.", "json:", "UnmarshalJSON", "struct"} {
			if strings.Contains(line, leak) {
				t.Errorf("%s: %q leaks %q", name, line, leak)
			}
		}
	}
}
