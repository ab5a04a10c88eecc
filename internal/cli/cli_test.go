package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/report"
	"github.com/tcpscope/tcpscope/internal/serve"
)

func serveNative(t *testing.T, lim serve.Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { perf.Add(&serve.Server{Limits: lim, Version: Version}).Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestExitCodes(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	addr := serveNative(t, serve.Limits{MaxDuration: 2 * time.Second})
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unknown flag", []string{"test", "--nope", "x"}, ExitUsage, "unknown flag"},
		{"no host", []string{"test"}, ExitUsage, "exactly one server address"},
		{"bad size", []string{"test", "-w", "lots", addr}, ExitUsage, "size"},
		{"bad rate", []string{"test", "--fq-rate", "fast", addr}, ExitUsage, "rate"},
		{"bad port", []string{"test", "127.0.0.1:99999"}, ExitUsage, "bad port"},
		{"bad parallel", []string{"test", "-P", "500", addr}, ExitUsage, "parallel"},
		{"bad interval", []string{"test", "-i", "1ms", addr}, ExitUsage, "10 ms"},
		{"refused", []string{"test", closed}, ExitRefused, "connection refused"},
		{"over limit", []string{"test", "-t", "5", addr}, ExitBusy, "limit"},
		{"bad cc", []string{"test", "-C", "nosuchcc", "-t", "0.2", addr}, ExitSocket, "TCP_CONGESTION"},
		{"server args", []string{"server", "extra"}, ExitUsage, "no arguments"},
		{"server port", []string{"server", "-p", "70000"}, ExitUsage, "bad --port"},
		{"server listen", []string{"server", "--listen", "5201", "-p", "5202"}, ExitUsage, "bad --listen"},
		{"unknown command", []string{"tset", addr}, ExitUsage, "unknown command"},
		{"-t 0", []string{"test", "-t", "0", addr}, ExitUsage, "-t 0"},
		{"-l 0", []string{"test", "-l", "0", addr}, ExitUsage, "-l 0"},
		{"-w 0", []string{"test", "-w", "0", addr}, ExitUsage, "-w 0"},
		{"ambiguous IPv6", []string{"test", "::1:5461"}, ExitUsage, "ambiguous"},
		{"lab repeat 0", []string{"lab", "run", "tuning", "--repeat", "0"}, ExitUsage, "bad --repeat"},
		{"lab -t 0", []string{"lab", "run", "tuning", "-t", "0"}, ExitUsage, "bad -t"},
		{"-c without a host", []string{"-c"}, ExitUsage, "exactly one server address"},
		{"-c and a host", []string{"test", "-c", addr, addr}, ExitUsage, "exactly one server address, got 2"},
		{"root flag", []string{"--nope"}, ExitUsage, "try: tcpscope --help"},
	}
	covered := map[int]bool{}
	for _, c := range cases {
		covered[c.code] = true
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := run(c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, stderr)
			}
			if strings.Count(strings.TrimRight(stderr, "\n"), "\n") != 0 || !strings.HasPrefix(stderr, "tcpscope: ") {
				t.Fatalf("want one line starting with tcpscope:, got %q", stderr)
			}
			if !strings.Contains(stderr, c.msg) || !strings.Contains(stderr, "try:") {
				t.Fatalf("stderr %q lacks %q or a hint", stderr, c.msg)
			}
		})
	}
	// The paths that need more than a command line, and the README's
	// table: every row has a path (exitcodes_test.go).
	testExitPaths(t, covered)
}

// iperf3 users choose the mode with -c HOST or -s: tcpscope reads them
// as test and server.
func TestIperf3ModeFlags(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
	// test -c HOST too: iperf3's flag inside the test command (it was
	// refused, "unknown shorthand flag").
	for _, args := range [][]string{{"-c", addr}, {"--client", addr}, {"--client=" + addr}, {"-c" + addr}, {"test", "-c", addr}, {"test", "--client", addr}} {
		code, out, stderr := run(append(args, "-t", "0.2", "--json", "--no-diagnose")...)
		var r model.Run
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Server != addr {
			t.Fatalf("%v: exit %d, %q, %.200s", args, code, stderr, out)
		}
	}
	if got := iperf3Habit([]string{"-s", "-p", "5299"}); strings.Join(got, " ") != "server -p 5299" {
		t.Fatalf("-s -p 5299 read as %q", got)
	}
	if got := iperf3Habit([]string{"test", "-c", "x"}); strings.Join(got, " ") != "test -c x" {
		t.Fatalf("a test's own flags rewritten: %q", got)
	}
}

// iperf3 users start a server with -p and -B: they set the port and the
// host of --listen.
func TestServerPortAndBind(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close() // a free port, to hand to the server
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() { done <- Main(ctx, []string{"server", "-B", "127.0.0.1", "-p", port}, &out, &errb) }()
	defer func() { cancel(); <-done }()
	addr := net.JoinHostPort("127.0.0.1", port)
	if err := testRuns(addr); err != nil {
		t.Fatal(err)
	}
}

// testRuns runs a short test against addr until one passes, for a server
// that is starting: it fails after 5 s.
func testRuns(addr string) error {
	return eventually(func() error {
		if code, _, stderr := run("test", addr, "-t", "0.2", "--no-diagnose"); code != 0 {
			return fmt.Errorf("no server on %s: exit %d, %s", addr, code, stderr)
		}
		return nil
	})
}

// eventually calls try every 20 ms until it succeeds, and returns its
// last error if it has not within 5 s: a condition to wait on, where a
// sleep would guess.
func eventually(try func() error) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := try()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTextOutputShowsBothEnds(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
	code, out, stderr := run("test", addr, "-t", "0.5", "-i", "0.2", "-P", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Acked", "Received", "[SUM]", "goodput", "client sender", "server receiver", "limited by"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Not a terminal, no $COLUMNS: 80 columns (a fix's command is
	// never broken).
	for _, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > 80 && !strings.HasPrefix(strings.TrimSpace(l), "fix, ") {
			t.Errorf("line wider than 80 columns: %q", l)
		}
	}
	if strings.Contains(out, "Written") {
		t.Errorf("80 columns show the write rate:\n%s", out)
	}
	// $COLUMNS widens it.
	t.Setenv("COLUMNS", "160")
	if code, out, stderr = run("test", addr, "-t", "0.3", "-i", "0.2"); code != 0 || !strings.Contains(out, "Written") {
		t.Errorf("COLUMNS=160: exit %d, no write rate column: %s\n%s", code, stderr, out)
	}
}

func TestJSONOutput(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
	code, out, stderr := run("test", addr, "-t", "0.4", "-i", "0.1", "--json", "-R")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r model.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON document: %v", err)
	}
	if r.Schema != model.SchemaVersion || len(r.Client.Intervals) == 0 || len(r.Remote.Intervals) == 0 || len(r.Summary) != 1 {
		t.Fatalf("incomplete document: schema %q, %d/%d intervals", r.Schema, len(r.Client.Intervals), len(r.Remote.Intervals))
	}
	if r.Summary[0].Direction != model.ServerToClient || r.Summary[0].ReceiverBytes.V != r.Summary[0].SenderBytes.V {
		t.Fatalf("summary %+v", r.Summary[0])
	}
}

func TestJSONStream(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
	code, out, stderr := run("test", addr, "-t", "0.4", "-i", "0.1", "--json-stream")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sides := map[model.Side]int{}
	var events []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var e report.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if e.Schema != model.SchemaVersion {
			t.Fatalf("schema %q", e.Schema)
		}
		events = append(events, e.Event)
		if e.Event == "interval" {
			sides[e.Side]++
		}
	}
	if events[0] != "begin" || events[len(events)-1] != "end" || sides[model.ClientSide] == 0 || sides[model.ServerSide] == 0 {
		t.Fatalf("events %v, sides %v", events, sides)
	}
}

func TestHostPort(t *testing.T) {
	cases := map[string]string{
		"host":             "host:5201",
		"host:7":           "host:7",
		"10.0.0.1":         "10.0.0.1:5201",
		"::1":              "[::1]:5201",
		"[::1]":            "[::1]:5201",
		"[2001:db8::1]:80": "[2001:db8::1]:80",
		"2001:db8::7":      "[2001:db8::7]:5201",
		"fe80::1":          "[fe80::1]:5201",
		"[::1:5461]":       "[::1:5461]:5201",
	}
	for in, want := range cases {
		got, err := hostPort(in, 5201)
		if err != nil || got != want {
			t.Errorf("hostPort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "host:0", "host:x", "[::1", "[::1]x"} {
		if _, err := hostPort(bad, 5201); err == nil {
			t.Errorf("hostPort(%q) accepted", bad)
		}
	}
	// ::1:5461 is an address, and ::1 with a port: which is meant is
	// asked, not guessed (it was taken whole, on port 5201).
	for _, amb := range []string{"::1:5461", "2001:db8::1:80"} {
		_, err := hostPort(amb, 5201)
		if code, hint := classify(err); err == nil || code != ExitUsage || !strings.Contains(hint, "]:") {
			t.Errorf("hostPort(%q): %v, exit %d, hint %q; want a usage error showing the brackets", amb, err, code, hint)
		}
	}
}

func TestLabProfiles(t *testing.T) {
	code, out, stderr := run("lab", "profiles")
	if code != 0 || !strings.Contains(out, "vhp") || !strings.Contains(out, "mistuned-2001") {
		t.Fatalf("exit %d, out %q, err %q", code, out, stderr)
	}
	dir := t.TempDir()
	good := dir + "/good.toml"
	os.WriteFile(good, []byte("[path.mine]\nrate = \"10M\"\nrtt = \"5ms\"\n"), 0o644)
	if code, out, _ := run("lab", "profiles", "--profiles", good); code != 0 || !strings.Contains(out, "mine") {
		t.Fatalf("user profile not listed: exit %d\n%s", code, out)
	}
	bad := dir + "/bad.toml"
	os.WriteFile(bad, []byte("[path.mine]\nrate = \"10M\"\nrtt = \"5ms\"\nlatncy = 1\n"), 0o644)
	code, _, stderr = run("lab", "profiles", "--profiles", bad)
	if code != ExitUsage || !strings.Contains(stderr, "unknown setting") {
		t.Fatalf("misspelt key: exit %d, %q", code, stderr)
	}
	if code, _, stderr := run("lab", "profiles", "--profiles", dir+"/none.toml"); code != ExitUsage || !strings.Contains(stderr, "no such file") {
		t.Fatalf("missing file: exit %d, %q", code, stderr)
	}
}

func TestLabNeedsRoot(t *testing.T) {
	code, _, stderr := run("lab", "clean")
	if os.Geteuid() == 0 {
		if code != 0 {
			t.Fatalf("as root: exit %d, %q", code, stderr)
		}
		return
	}
	if code != ExitPrivilege || !strings.Contains(stderr, "needs root") {
		t.Fatalf("not root: exit %d, %q", code, stderr)
	}
}

// -k counts blocks of -l bytes, as iperf3's does.
func TestBlockCount(t *testing.T) {
	addr := serveNative(t, serve.Limits{})
	code, out, stderr := run("test", addr, "-k", "40", "-l", "64K", "--json", "--no-diagnose")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r model.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Config.Bytes != 40*64*model.KiB || r.Summary[0].SenderBytes.V != 40*64*model.KiB || r.Summary[0].ReceiverBytes.V != 40*64*model.KiB {
		t.Errorf("-k 40 -l 64K: config %v B, summary %+v", r.Config.Bytes, r.Summary[0])
	}
	if code, _, stderr := run("test", addr, "-k", "40", "-n", "1M"); code != ExitUsage || !strings.Contains(stderr, "-n or -k") {
		t.Errorf("-k with -n: exit %d, %q", code, stderr)
	}
	// Without -l, a block is iperf3's 128 KiB (tcpscope writes 1 MiB by
	// default): an iperf3 user's -k 40 is 5 MiB, not 40 MiB.
	code, out, stderr = run("test", addr, "-k", "40", "--json", "--no-diagnose")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Config.Bytes != 40*128*model.KiB || r.Config.Length != 128*model.KiB || r.Summary[0].ReceiverBytes.V != 40*128*model.KiB {
		t.Errorf("-k 40: config %v in writes of %v, summary %+v", r.Config.Bytes, r.Config.Length, r.Summary[0])
	}
}
