package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/perf/perftest"
)

// mainAsync runs Main in the background; the returned function waits
// for its exit code, failing the test after within.
func mainAsync(t *testing.T, ctx context.Context, args ...string) (wait func(within time.Duration) (int, string, string)) {
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Main(ctx, args, &out, &errb) }()
	return func(within time.Duration) (int, string, string) {
		t.Helper()
		select {
		case code := <-done:
			return code, out.String(), errb.String()
		case <-time.After(within):
			t.Fatalf("tcpscope %s still running after %v", strings.Join(args, " "), within)
			return 0, "", ""
		}
	}
}

// server -1 serves one test, a stock iperf3 client's, and exits 0; a
// connection that said nothing before it did not use the test up.
func TestServerOneOffIperf3Client(t *testing.T) {
	iperf3, err := exec.LookPath("iperf3")
	if err != nil {
		t.Skip("iperf3 not installed (make setup installs it)")
	}
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := mainAsync(t, ctx, "server", "-1", "-B", "127.0.0.1", "-p", strconv.Itoa(port))
	perftest.WaitListening(t, port)
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	c.Close() // a port scanner: refused before any test, it does not count
	out, err := exec.Command(iperf3, "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("iperf3 -c: %v\n%s", err, out)
	}
	code, stdout, stderr := wait(15 * time.Second)
	if code != 0 {
		t.Fatalf("server -1 after its test: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "serving one test (-1)") || !strings.Contains(stderr, `msg="iperf3 test done"`) {
		t.Errorf("server -1's output does not say what it did:\n%s%s", stdout, stderr)
	}
}

// A native test ends a -1 server too, and the server's exit code is 0.
func TestServerOneOffNative(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := mainAsync(t, ctx, "server", "--one-off", "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	perftest.WaitListening(t, port)
	if code, _, stderr := run("test", fmt.Sprintf("127.0.0.1:%d", port), "-t", "0.3", "--no-diagnose"); code != 0 {
		t.Fatalf("test: exit %d: %s", code, stderr)
	}
	if code, stdout, stderr := wait(15 * time.Second); code != 0 {
		t.Fatalf("server -1: exit %d\n%s%s", code, stdout, stderr)
	}
}

// --idle-timeout stops a server nobody came to: exit 0, and with -1,
// whose test never came, exit 5 (timeout) with a hint.
func TestServerIdleTimeout(t *testing.T) {
	for _, tc := range []struct {
		oneOff bool
		code   int
	}{{false, ExitOK}, {true, ExitTimeout}} {
		t.Run(fmt.Sprintf("one-off=%v", tc.oneOff), func(t *testing.T) {
			t.Parallel() // waits on the clock
			args := []string{"server", "--listen", "127.0.0.1:0", "--idle-timeout", "0.3"}
			if tc.oneOff {
				args = append(args, "-1")
			}
			wait := mainAsync(t, context.Background(), args...)
			code, stdout, stderr := wait(10 * time.Second)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
			}
			if tc.oneOff && !strings.Contains(stderr, "no test came within --idle-timeout 300ms (try: ") {
				t.Errorf("stderr does not say why: %s", stderr)
			}
		})
	}
}

// A port another server holds: exit 11 with a hint naming the way out.
func TestServerPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := run("server", "--listen", ln.Addr().String())
	if code != ExitInUse || !strings.Contains(stderr, "another server is listening on "+ln.Addr().String()+": stop it or use -p") {
		t.Fatalf("exit %d, want %d with a hint: %s", code, ExitInUse, stderr)
	}
	if strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("more than one line: %q", stderr)
	}
}

// server -D (iperf3 -D): the parent exits 0 once the server listens; the
// server runs on in a session of its own, its pid in -I's file and its
// output in --logfile, serves tests, and removes the pid file when
// stopped. A daemon that cannot listen makes the parent fail with its
// error and exit code. (The program re-executed is this test binary,
// whose TestMain is tcpscope for a daemon child.)
func TestServerDaemon(t *testing.T) {
	dir := t.TempDir()
	pidfile, logfile := filepath.Join(dir, "server.pid"), filepath.Join(dir, "server.log")
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	code, stdout, stderr := run("server", "-D", "-I", pidfile, "--logfile", logfile, "--listen", addr)
	if code != 0 {
		t.Fatalf("server -D: exit %d: %s%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("no pid file once the parent exited: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q: %v", b, err)
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = proc.Signal(syscall.SIGKILL) // the daemon this test started, by its pid
			_, _ = proc.Wait()
		}
	}()
	if !strings.Contains(stdout, fmt.Sprintf("pid %d", pid)) {
		t.Errorf("the parent does not name the daemon's pid %d: %s", pid, stdout)
	}
	// A session of its own: no controlling terminal to lose.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 4 || fields[3] != strconv.Itoa(pid) {
		t.Errorf("daemon %d is not a session leader: stat %s", pid, stat)
	}
	if code, _, stderr := run("test", addr, "-t", "0.3", "--no-diagnose"); code != 0 {
		t.Fatalf("test against the daemon: exit %d: %s", code, stderr)
	}
	// A second daemon on the same port fails, and its parent says why.
	code, _, stderr = run("server", "-D", "--listen", addr)
	if code != ExitInUse || !strings.Contains(stderr, "stop it or use -p") {
		t.Errorf("a second server -D on %s: exit %d, want %d: %s", addr, code, ExitInUse, stderr)
	}
	if err := proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	st, err := proc.Wait() // the daemon is still this process's child
	stopped = true
	if err != nil || st.ExitCode() != 0 {
		t.Errorf("daemon after SIGTERM: %v, %v", st, err)
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("pid file left behind: %v", err)
	}
	log, _ := os.ReadFile(logfile)
	for _, want := range []string{"server listening on 127.0.0.1:", `msg="test done"`, "tcpscope server stopped"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log file lacks %q:\n%s", want, log)
		}
	}
}
