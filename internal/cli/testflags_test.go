package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
)

// -i 0 is iperf3's "no interval reports": the text and the JSON stream
// carry none, while the test still samples each second for the summary
// (the -J document keeps those samples, as docs/JSON.md says).
func TestIntervalZero(t *testing.T) {
	addr := server(t, perf.Limits{})
	// An interval line names its span ("0.00-1.01"); the control run
	// keeps the pattern true to the layout.
	span := regexp.MustCompile(`\d\.\d\d-\d\.\d\d`)
	code, out, stderr := run("test", addr, "-t", "1.2", "-i", "0.5", "--no-diagnose")
	if code != 0 || !span.MatchString(out) {
		t.Fatalf("-i 0.5: exit %d (%s), no interval line:\n%s", code, stderr, out)
	}
	code, out, stderr = run("test", addr, "-t", "1.2", "-i", "0", "--no-diagnose")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if span.MatchString(out) {
		t.Fatalf("-i 0 printed interval lines:\n%s", out)
	}
	if !strings.Contains(out, "goodput") {
		t.Fatalf("no summary:\n%s", out)
	}
	code, out, stderr = run("test", addr, "-t", "1.2", "-i", "0", "--no-diagnose", "--json-stream")
	if code != 0 || strings.Contains(out, `"event":"interval"`) || !strings.Contains(out, `"event":"end"`) {
		t.Fatalf("exit %d (%s), json stream:\n%.400s", code, stderr, out)
	}
	code, out, stderr = run("test", addr, "-t", "1.2", "-i", "0", "--no-diagnose", "--json")
	var r model.Run
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("exit %d (%s): %.300s", code, stderr, out)
	}
	if r.Config.Interval != perf.DefaultInterval || len(r.Client.Intervals) == 0 {
		t.Fatalf("-J with -i 0: interval %v, %d client intervals; want the default's samples", r.Config.Interval, len(r.Client.Intervals))
	}
}
