package cli

import (
	"encoding/json"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

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

// silentListener is a server that connects but never answers: a
// listener nobody accepts from (the kernel completes the handshake).
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// --connect-timeout takes iperf3's milliseconds or a unit, and a server
// that never answers fails after it with exit 5 (the default waits 20 s),
// on the native and the --iperf3 paths.
func TestConnectTimeout(t *testing.T) {
	addr := silentListener(t)
	for _, args := range [][]string{
		{"--connect-timeout", "300"},
		{"--connect-timeout", "300ms"},
		{"--connect-timeout", "300", "--iperf3"},
	} {
		began := time.Now()
		code, _, stderr := run(append([]string{"test", addr}, args...)...)
		took := time.Since(began)
		if code != ExitTimeout || !strings.Contains(stderr, "within the connect timeout of 300ms") || !strings.Contains(stderr, "try:") {
			t.Fatalf("%v: exit %d, %q", args, code, stderr)
		}
		// Well under the 10 s it would wait without the flag: the
		// timeout, not the default, ended it.
		if took < 300*time.Millisecond || took > 5*time.Second {
			t.Fatalf("%v: failed after %v", args, took)
		}
	}
	for _, v := range []string{"0", "-1", "soon", "25h"} {
		if code, _, stderr := run("test", addr, "--connect-timeout", v); code != ExitUsage {
			t.Fatalf("--connect-timeout %s: exit %d, %q", v, code, stderr)
		}
	}
}
