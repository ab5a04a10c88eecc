package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// server --limits FILE --check prints what a file means, and a bad file,
// a missing one or a limit flag beside a file is one line and exit 2.
func TestServerLimitsCheck(t *testing.T) {
	code, out, errs := run("server", "--limits", "../../deploy/limits.toml", "--check")
	if code != 0 || !strings.Contains(out, "class members: 10.0.0.0/8, 2001:db8::/32") || !strings.Contains(out, "class default: every address no class above holds") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, out, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("[default]\nmax_duraton = \"1h\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--limits", bad, "--check"}, `line 2: unknown setting "default.max_duraton"`},
		{[]string{"--limits", filepath.Join(t.TempDir(), "none.toml")}, "read limits:"},
		{[]string{"--limits", "../../deploy/limits.toml", "--max-tests", "3"}, "--max-tests and --limits together"},
		{[]string{"--max-streams", "0", "--check"}, "bad server limits"},
	} {
		code, _, errs := run(append([]string{"server"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 || !strings.Contains(errs, "try:") {
			t.Errorf("server %v: exit %d, stderr %q; want exit %d and one line with %q and a hint", tc.args, code, errs, ExitUsage, tc.want)
		}
	}
	code, out, _ = run("server", "--max-tests", "3", "--check")
	if code != 0 || !strings.Contains(out, "server: 3 tests") || !strings.Contains(out, "class default: every address\n") ||
		!strings.Contains(out, "access     anyone") || !strings.Contains(out, "tls        off") {
		t.Errorf("flags' limits: exit %d:\n%s", code, out)
	}
}

// With --json-log every line the server writes is a JSON object, the
// first ("server listening") and the last ("server stopped") included,
// and a test's admission names its class and its cap.
func TestServerJSONLogIsAllJSON(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a free port, to hand to the server
	file := filepath.Join(t.TempDir(), "limits.toml")
	if err := os.WriteFile(file, []byte("[[class]]\nname = \"local\"\nnetworks = [\"127.0.0.0/8\"]\nmax_rate = \"1G\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"server", "--listen", addr, "--json-log", "--limits", file}, &out, &errb)
	}()
	if err := testRuns(addr); err != nil {
		cancel()
		<-done
		t.Fatal(err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("server exit %d: %s", code, errb.String())
	}
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()+errb.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("not JSON: %q", l)
			continue
		}
		msg, _ := rec["msg"].(string)
		msgs = append(msgs, msg)
		if msg == "test admitted" && (rec["class"] != "local" || rec["rate_cap"] != "1.00 Gbit/s") {
			t.Errorf("admission without its class and cap: %s", l)
		}
	}
	if len(msgs) < 4 || msgs[0] != "server listening" || msgs[len(msgs)-1] != "server stopped" || !slices.Contains(msgs, "test admitted") {
		t.Errorf("log messages %q", msgs)
	}
}

// --health serves /healthz; SIGUSR1, or POST /lameduck from loopback,
// puts the server in lame-duck mode and, with no test running, it exits
// cleanly.
func TestServerLameDuck(t *testing.T) {
	for _, how := range []string{"SIGUSR1", "POST /lameduck"} {
		t.Run(how, func(t *testing.T) {
			free := func() string {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				return ln.Addr().String()
			}
			addr, hAddr := free(), free()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out, errb bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- Main(ctx, []string{"server", "--listen", addr, "--health", hAddr, "--json-log"}, &out, &errb)
			}()
			var resp *http.Response
			if err := eventually(func() (err error) {
				resp, err = http.Get("http://" + hAddr + "/healthz")
				return err
			}); err != nil {
				t.Fatalf("no health endpoint: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/healthz: %s", resp.Status)
			}
			// The server's own port answers /healthz too, but lame duck
			// only on --health: a page in a browser on the host could
			// post to the public port.
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				t.Fatalf("/healthz on the server's port: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"serving"`) {
				t.Fatalf("/healthz on the server's port: %s %s", resp.Status, body)
			}
			if resp, err := http.Post("http://"+addr+"/lameduck", "", nil); err != nil || resp.StatusCode != http.StatusNotFound {
				t.Fatalf("POST /lameduck on the server's port: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
			// The handler for SIGUSR1 is in place before /healthz answers.
			if how == "SIGUSR1" {
				if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
					t.Fatal(err)
				}
			} else {
				resp, err := http.Post("http://"+hAddr+"/lameduck", "", nil)
				if err != nil || resp.StatusCode != http.StatusAccepted {
					t.Fatalf("POST /lameduck: %v %v", resp, err)
				}
				resp.Body.Close()
			}
			select {
			case code := <-done:
				if code != 0 || !strings.Contains(errb.String(), "lame duck") {
					t.Fatalf("exit %d, log %s", code, errb.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("an idle server in lame-duck mode did not exit")
			}
		})
	}
}

// With --json-log the error that stops a server is a JSON line too, with
// the exit code a script sees.
func TestServerJSONLogError(t *testing.T) {
	code, out, errs := run("server", "--limits", filepath.Join(t.TempDir(), "none.toml"), "--json-log")
	var rec map[string]any
	if code != ExitUsage || out != "" || json.Unmarshal([]byte(errs), &rec) != nil || rec["msg"] != "server failed" || rec["exit_code"] != float64(ExitUsage) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// --config takes the flags' settings from a TOML file, the command line
// overriding it; a misspelt or malformed setting is one line with its
// line number and a hint.
func TestServerConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("server.toml", "# a long-running server\nmax-tests = 3\nmax-streams = 16\n\"max-duration\" = \"90s\"\n")
	code, out, errs := run("server", "--config", good, "--check")
	if code != 0 || !strings.Contains(out, "server: 3 tests") || !strings.Contains(out, "streams    16 per test") || !strings.Contains(out, "1m30s") {
		t.Errorf("from the file: exit %d:\n%s%s", code, out, errs)
	}
	code, out, errs = run("server", "--config", good, "--max-tests", "5", "--check")
	if code != 0 || !strings.Contains(out, "server: 5 tests") || !strings.Contains(out, "streams    16 per test") {
		t.Errorf("the command line over the file: exit %d:\n%s%s", code, out, errs)
	}
	for _, tc := range []struct{ body, want string }{
		{"max-tests = 3\nmax-tsts = 4\n", `line 2: unknown setting "max-tsts"`},
		{"max-tests = 3\n[server]\nmax-tests = 3\n", "line 2: [server] is a table"},
		{"max-tests = \"many\"\n", `max-tests = "many"`},
		{"max-tests = = 3\n", "line 1:"},
		{"config = \"other.toml\"\n", `unknown setting "config"`},
	} {
		code, _, errs := run("server", "--config", write("bad.toml", tc.body), "--check")
		if code != ExitUsage || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 || !strings.Contains(errs, "try:") {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and one line with %q and a hint", tc.body, code, errs, ExitUsage, tc.want)
		}
	}
	if code, _, errs := run("server", "--config", filepath.Join(dir, "none.toml")); code != ExitUsage || !strings.Contains(errs, "--config") {
		t.Errorf("a missing file: exit %d, %q", code, errs)
	}
}
