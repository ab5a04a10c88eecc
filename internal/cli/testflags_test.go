package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf/perftest"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// -i 0 is iperf3's "no interval reports": the text and the JSON stream
// carry none, while the test still samples each second for the summary
// (the -J document keeps those samples, as docs/JSON.md says).
func TestIntervalZero(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
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
	if span.MatchString(out) || strings.Contains(out, "[ ID]") || strings.Contains(out, "Acked:") {
		t.Fatalf("-i 0 printed interval lines, their header or legend:\n%s", out)
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
	if r.Config.Interval != engine.DefaultInterval || len(r.Client.Intervals) == 0 {
		t.Fatalf("-J with -i 0: interval %v, %d client intervals; want the default's samples", r.Config.Interval, len(r.Client.Intervals))
	}
	// iperf3 -i 0 -J has one interval spanning the test.
	code, out, stderr = run("test", addr, "-t", "2.2", "-i", "0", "--no-diagnose", "-f", "iperf3-json")
	var doc struct {
		Intervals []struct {
			Sum struct {
				Start, End float64
				Bytes      int64
			} `json:"sum"`
		} `json:"intervals"`
		End struct {
			SumSent struct{ Bytes int64 } `json:"sum_sent"`
		} `json:"end"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("exit %d (%s): %.300s", code, stderr, out)
	}
	if len(doc.Intervals) != 1 || doc.Intervals[0].Sum.Start != 0 || doc.Intervals[0].Sum.End < 2 ||
		doc.Intervals[0].Sum.Bytes != doc.End.SumSent.Bytes {
		t.Fatalf("-f iperf3-json -i 0: want one interval over the test with all %d bytes sent, got %+v", doc.End.SumSent.Bytes, doc.Intervals)
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

// -T, --timestamps and --logfile as iperf3's: every line of the report
// prefixed "TIME TITLE:  ", the output appended to the file (stdout
// empty), a failure's line in the file too.
func TestTitleTimestampsLogfile(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
	logfile := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(logfile, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run("test", addr, "-t", "0.5", "--no-diagnose", "-T", "lab 1", "--timestamps=%H:%M:%S ", "--logfile", logfile)
	if code != 0 || out != "" {
		t.Fatalf("exit %d (%s), stdout %q", code, stderr, out)
	}
	b, _ := os.ReadFile(logfile)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0] != "kept" || len(lines) < 5 {
		t.Fatalf("log file not appended to:\n%s", b)
	}
	prefix := regexp.MustCompile(`^\d\d:\d\d:\d\d lab 1:  .`)
	for _, l := range lines[1:] {
		if !prefix.MatchString(l) {
			t.Fatalf("line %q lacks the time and title", l)
		}
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	if code, _, stderr = run("test", closed, "--logfile", logfile); code != ExitRefused || !strings.Contains(stderr, "connection refused") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	if b, _ = os.ReadFile(logfile); !strings.HasSuffix(string(b), "tcpscope: "+strings.TrimPrefix(stderr, "tcpscope: ")) {
		t.Fatalf("the failure is not in the log file:\n%s", b)
	}
	for _, args := range [][]string{{"-J", "-T", "x"}, {"--json-stream", "--timestamps"}, {"--timestamps=%Q"}} {
		if code, _, stderr := run(append([]string{"test", addr}, args...)...); code != ExitUsage {
			t.Fatalf("%v: exit %d, %q", args, code, stderr)
		}
	}
}

// iperf3's default stamp, strftime's "%c " in the C locale, is Go's
// ANSIC; other directives map one to one.
func TestStrftimeLayout(t *testing.T) {
	at := time.Date(2026, 11, 7, 8, 5, 3, 0, time.UTC)
	for f, want := range map[string]string{
		iperf3Timestamps:     "Sat Nov  7 08:05:03 2026 ",
		"%F %T %%":           "2026-11-07 08:05:03 %",
		"%Y%m%d-%H%M%S ":     "20261107-080503 ",
		"15:04:05.000 (Go) ": "08:05:03.000 (Go) ",
	} {
		layout, err := strftimeLayout(f)
		if err != nil || at.Format(layout) != want {
			t.Errorf("%q: %q (%v), want %q", f, at.Format(layout), err, want)
		}
	}
	if _, err := strftimeLayout("%"); err == nil {
		t.Error("a lone % taken")
	}
}

// -S and --dscp set both ends' data sockets' type of service: each end
// reads it back (getsockopt) into its stream setup, TCP and UDP, either
// direction.
func TestTOSBothEnds(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
	for _, c := range []struct {
		args []string
		tos  int
	}{
		{[]string{"-S", "0x28"}, 0x28},
		{[]string{"-S", "184"}, 184},
		{[]string{"--dscp", "AF41", "-R"}, 34 << 2},
		{[]string{"--dscp", "ef", "-u"}, 46 << 2},
		{[]string{"--dscp", "10", "-u", "-R"}, 10 << 2},
	} {
		code, out, stderr := run(append([]string{"test", addr, "-t", "0.3", "--json", "--no-diagnose"}, c.args...)...)
		var r model.Run
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("%v: exit %d (%s)", c.args, code, stderr)
		}
		if r.Config.TOS != c.tos || len(r.Streams) != 1 {
			t.Fatalf("%v: config TOS %d, want %d", c.args, r.Config.TOS, c.tos)
		}
		for end, s := range map[string]*model.SocketSetup{"client": r.Streams[0].Client, "server": r.Streams[0].Server} {
			if s == nil || s.TOS == nil || *s.TOS != c.tos {
				t.Fatalf("%v: %s's setup %+v, want TOS %d read back", c.args, end, s, c.tos)
			}
		}
	}
	for _, args := range [][]string{{"-S", "256"}, {"-S", "-1"}, {"--dscp", "64"}, {"--dscp", "AF44"}, {"-S", "8", "--dscp", "EF"}} {
		if code, _, stderr := run(append([]string{"test", addr}, args...)...); code != ExitUsage || !strings.Contains(stderr, "try:") {
			t.Fatalf("%v: exit %d, %q", args, code, stderr)
		}
	}
}

// -A n[,m]: the client pins itself (and unpins at the end: the test
// runs in this process); a server that does not allow clients to pin it
// runs the test unpinned, and the client warns.
func TestAffinityFlag(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
	code, out, stderr := run("test", addr, "-t", "0.3", "--json", "--no-diagnose", "-A", "0,0")
	var r model.Run
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("exit %d (%s)", code, stderr)
	}
	if r.Config.ClientCPU == nil || *r.Config.ClientCPU != 0 || r.Config.ServerCPU == nil || *r.Config.ServerCPU != 0 {
		t.Fatalf("config %+v", r.Config)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "did not pin itself to CPU 0") {
		t.Fatalf("no warning of the unpinned server: %q", r.Warnings)
	}
	for _, v := range []string{"x", "0,", "-1", "0,1024", "4096"} {
		if code, _, stderr := run("test", addr, "-A", v); code != ExitUsage || !strings.Contains(stderr, "try:") {
			t.Fatalf("-A %s: exit %d, %q", v, code, stderr)
		}
	}
}

// The automatic fallback to iperf3's protocol says so above the results,
// where the other setup warnings are, not after them.
func TestFallbackWarningFirst(t *testing.T) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("iperf3 is not installed (make setup installs it)")
	}
	port := freePort(t)
	srv := exec.Command("iperf3", "-s", "-B", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	perftest.WaitListening(t, port)
	code, out, stderr := run("test", fmt.Sprintf("127.0.0.1:%d", port), "-t", "1", "--no-diagnose")
	warning, results := strings.Index(out, "the server is a stock iperf3"), strings.Index(out, "goodput")
	if code != 0 || warning < 0 || results < 0 || warning > results {
		t.Fatalf("exit %d (%s): warning at %d, results at %d:\n%s", code, stderr, warning, results, out)
	}
}
