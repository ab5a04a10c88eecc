package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// readmeExitCodes are the codes of the README's exit-code table.
func readmeExitCodes(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## Exit codes\n")
	if !ok {
		t.Fatal("README has no '## Exit codes' section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var codes []int
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(table, -1) {
		n, _ := strconv.Atoi(m[1])
		codes = append(codes, n)
	}
	if len(codes) < 10 {
		t.Fatalf("read %d rows of the README's exit-code table: %v", len(codes), codes)
	}
	return codes
}

// trigger is an output that calls f once when what it has been given
// contains mark.
type trigger struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark string
	once sync.Once
	f    func()
}

func (w *trigger) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(b)
	hit := strings.Contains(w.buf.String(), w.mark)
	w.mu.Unlock()
	if hit {
		w.once.Do(w.f)
	}
	return len(b), nil
}

func (w *trigger) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// foreignListener answers every connection as another service would:
// an SSH banner, then silence until the client hangs up.
func foreignListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
				var b [512]byte
				for {
					if _, err := c.Read(b[:]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// resetListener resets every connection as its hello arrives (SO_LINGER
// 0), as a server that will not take it may.
func resetListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Once the hello starts to arrive: a reset before it is
			// one while connecting (exit 3), not at hello.
			var b [1]byte
			c.Read(b[:])
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// testExitPaths runs the exit codes' real paths TestExitCodes' table
// does not (a success, a silent or foreign server, a server shut down
// mid-test, an interrupt, a missing facility), marks them covered, and
// fails if a code of the README's table has no path.
func testExitPaths(t *testing.T, covered map[int]bool) {
	oneLine := func(t *testing.T, stderr, msg string) {
		t.Helper()
		if strings.Count(strings.TrimRight(stderr, "\n"), "\n") != 0 || !strings.HasPrefix(stderr, "tcpscope: ") ||
			!strings.Contains(stderr, msg) || !strings.Contains(stderr, "try:") || strings.Contains(stderr, "try: try") {
			t.Fatalf("want one line with %q and a hint, got %q", msg, stderr)
		}
	}
	expect := func(name string, code int, msg string, args ...string) {
		covered[code] = true
		t.Run(name, func(t *testing.T) {
			got, _, stderr := run(args...)
			if got != code {
				t.Fatalf("exit %d, want %d; stderr %q", got, code, stderr)
			}
			oneLine(t, stderr, msg)
		})
	}
	addr := serveNative(t, serve.Limits{})

	covered[ExitOK] = true
	t.Run("success", func(t *testing.T) {
		if code, out, stderr := run("test", addr, "-t", "0.2", "--no-diagnose"); code != ExitOK || stderr != "" || !strings.Contains(out, "goodput") {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	})
	expect("log file not writable", ExitFailure, "--logfile", "test", addr, "--logfile", filepath.Join(t.TempDir(), "no", "log"))
	expect("unresolvable name", ExitUnreachable, "cannot resolve", "test", "nosuch.invalid")
	expect("unresolvable name, iperf3", ExitUnreachable, "cannot resolve", "test", "--iperf3", "nosuch.invalid")
	expect("silent server", ExitTimeout, "no answer", "test", silentListener(t), "--connect-timeout", "300")
	expect("no SYN-ACK", ExitTimeout, "timed out connecting", "test", fullListener(t), "--connect-timeout", "300")
	expect("not a tcpscope server", ExitProtocol, "does not speak tcpscope's protocol", "test", foreignListener(t))
	expect("reset at hello", ExitProtocol, "closed the connection", "test", resetListener(t))
	limited := serveNative(t, serve.Limits{MaxDuration: 300 * time.Millisecond})
	expect("byte count cut by the server's limit", ExitBusy, "duration limit", "test", limited, "-n", "1T", "--no-diagnose")
	t.Run("timed test at the server's limit", func(t *testing.T) {
		// It meets the limit at its own end (ended server-limit): it ran.
		if code, _, stderr := run("test", limited, "-t", "0.3", "--no-diagnose"); code != ExitOK {
			t.Fatalf("exit %d, %q", code, stderr)
		}
	})
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	expect("server's port in use", ExitInUse, "another server is listening", "server", "--listen", taken.Addr().String())
	// A hint names a test's settings by field; the command line says
	// its flags.
	expect("hint in flags", ExitUsage, "try: drop -C, -M, -N, -Z and --skip-rx-copy with -u", "test", addr, "-u", "-C", "cubic")
	expect("calc hint", ExitUsage, "try: tcpscope calc bdp --help", "calc", "bdp", "--rate", "100Mb", "--rtt", "20ms")

	// A server shut down mid-test (SIGTERM's path): the results so far
	// are printed, and the exit status says the test broke off.
	covered[ExitAborted] = true
	t.Run("server shut down mid-test", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { perf.Add(&serve.Server{Version: Version}).Serve(sctx, ln); close(done) }()
		defer func() { stop(); <-done }()
		out := &trigger{mark: `"event":"interval"`, f: stop}
		var errb bytes.Buffer
		code := Main(context.Background(), []string{"test", ln.Addr().String(), "-t", "20", "-i", "0.1", "--json-stream", "--no-diagnose"}, out, &errb)
		if code != ExitAborted {
			t.Fatalf("exit %d, want %d; stderr %q", code, ExitAborted, errb.String())
		}
		oneLine(t, errb.String(), "server-shutdown")
		if !strings.Contains(out.String(), `"event":"end"`) || !strings.Contains(out.String(), `"ended":"server-shutdown"`) {
			t.Fatalf("no results: %.300s", out.String())
		}
	})

	covered[ExitInterrupted] = true
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := &trigger{mark: `"event":"interval"`, f: cancel}
		var errb bytes.Buffer
		code := Main(ctx, []string{"test", addr, "-t", "20", "-i", "0.1", "--json-stream", "--no-diagnose"}, out, &errb)
		if code != ExitInterrupted || !strings.Contains(out.String(), `"ended":"interrupted"`) {
			t.Fatalf("exit %d, stderr %q, output %.300s", code, errb.String(), out.String())
		}
	})

	// A missing facility: the lab without root, or (as root) netem
	// asked for on a kernel without it. As root under -short nothing
	// here runs without making a namespace: the row is covered by the
	// non-root path, and TestLabNeedsRoot.
	covered[ExitPrivilege] = true
	t.Run("needs root or a facility", func(t *testing.T) {
		if os.Geteuid() != 0 {
			code, _, stderr := run("lab", "clean")
			if code != ExitPrivilege {
				t.Fatalf("exit %d, %q", code, stderr)
			}
			oneLine(t, stderr, "needs root")
			return
		}
		if testing.Short() {
			t.Skip("as root, the netem probe makes a namespace: not under -short")
		}
		if lab.HasNetem(context.Background()) == nil {
			t.Skip("this kernel has netem and this user is root: no path to exit 10 here")
		}
		code, _, stderr := run("lab", "run", "tuning", "--backend", "netem", "--quick")
		if code != ExitPrivilege {
			t.Fatalf("exit %d, %q", code, stderr)
		}
		oneLine(t, stderr, "netem")
	})

	for _, code := range readmeExitCodes(t) {
		if !covered[code] {
			t.Errorf("the README's exit code %d has no path in TestExitCodes", code)
		}
	}
}
