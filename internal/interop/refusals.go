package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Refusal is a server refusing a stock iperf3 client: the condition set
// up on a tcpscope server and, where stock has the same limit, on a
// stock server, and the client's flags. A user's scripts read the
// client's exit code and its error text, so both must be stock's (or,
// where stock has no such limit, a clear text, never a bare errno).
type Refusal struct {
	Name string
	// Server flags for `tcpscope server`.
	Server []string
	// Busy runs one long test first, so the server is occupied.
	Busy bool
	// StockToo: a stock server can be put in the same state (Busy).
	StockToo bool
	Args     []string
	// Want is a phrase the client's error must carry: the limit's
	// name where the protocol can carry it.
	Want string
}

// Refusals is every refusal the harness checks.
func Refusals() []Refusal {
	return []Refusal{
		{Name: "server busy", Server: []string{"--max-tests", "1"}, Busy: true, StockToo: true, Args: []string{"-t", "1"},
			Want: "busy"},
		// iperf3's SERVER_ERROR carries two numbers and no text, and
		// 3.12 knows no error for a server's own limits: the nearest it
		// prints as text is a new test refused with ERANGE. (A 3.20 or
		// later client is told its own max-duration error.)
		{Name: "test longer than --max-duration", Server: []string{"--max-duration", "2s"}, Args: []string{"-t", "5"},
			Want: "out of range"},
		{Name: "more streams than --max-streams", Server: []string{"--max-streams", "4"}, Args: []string{"-t", "1", "-P", "8"},
			Want: "out of range"},
	}
}

// RefusalResult is what the stock client said, against each server.
type RefusalResult struct {
	Tcpscope, Stock *Result // Stock is nil when stock has no such limit
}

// Refuse runs one refusal: its own servers (on 127.0.0.1, stopped when
// it returns), the long test if Busy, then the client.
func (h *Harness) Refuse(ctx context.Context, rf Refusal) (RefusalResult, error) {
	var out RefusalResult
	run := func(server []string) (*Result, error) {
		port, err := freePort("127.0.0.1")
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(server[0], append(server[1:], "-B", "127.0.0.1", "-p", strconv.Itoa(port))...)
		h.logTo(cmd)
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", server[0], err)
		}
		defer stopProcess(cmd)
		if err := waitListening(ctx, "127.0.0.1", port); err != nil {
			return nil, err
		}
		if rf.Busy {
			long := exec.CommandContext(ctx, h.Iperf3, "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "30", "-b", "1M")
			// Its output goes to a file (written by the process itself,
			// read only if it never started).
			said, err := os.CreateTemp("", "tcpscope-interop-long-*")
			if err != nil {
				return nil, err
			}
			defer os.Remove(said.Name())
			defer said.Close()
			long.Stdout, long.Stderr = said, said
			if err := long.Start(); err != nil {
				return nil, err
			}
			defer stopProcess(long)
			// The server is busy once the long test's data connection is
			// up: two established connections to its port (control and
			// data), seen in /proc/net/tcp.
			deadline := time.Now().Add(10 * time.Second)
			for established(port) < 2 {
				if time.Now().After(deadline) {
					return nil, fmt.Errorf("the long test did not start in 10 s (%d connections established; the client said %q)", established(port), readAll(said.Name()))
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		r := h.client(ctx, Reference, "127.0.0.1", port, rf.Args)
		return &r, nil
	}
	var err error
	if out.Tcpscope, err = run(append([]string{h.Tcpscope, "server"}, rf.Server...)); err != nil {
		return out, err
	}
	if rf.StockToo {
		if out.Stock, err = run([]string{h.Iperf3, "-s"}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// CheckRefusal is what failed: the client must fail against the
// tcpscope server with an error that names the limit, never a bare
// errno, and, where stock has the limit, with stock's exit code and
// stock's text.
func CheckRefusal(rf Refusal, rr RefusalResult) []string {
	var bad []string
	t := rr.Tcpscope
	if t == nil {
		return []string{"no result"}
	}
	msg := firstLine(t.Error, t.Stderr)
	switch {
	case t.Exit == 0 && t.Error == "":
		bad = append(bad, "the client was not refused")
	case strings.Contains(msg, "int_errno") || strings.HasSuffix(strings.TrimSpace(msg), ":"):
		bad = append(bad, fmt.Sprintf("a bare error number reached the client: %q", msg))
	case !strings.Contains(strings.ToLower(msg), rf.Want):
		bad = append(bad, fmt.Sprintf("the client's error %q does not say %q", msg, rf.Want))
	}
	if s := rr.Stock; s != nil {
		if s.Exit != t.Exit {
			bad = append(bad, fmt.Sprintf("exit %d, stock's server gives %d", t.Exit, s.Exit))
		}
		if sm := firstLine(s.Error, s.Stderr); sm != msg {
			bad = append(bad, fmt.Sprintf("error %q, stock's server gives %q", msg, sm))
		}
	}
	return bad
}

// stopProcess ends a process this package started, by its PID.
func stopProcess(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Said is a client's exit code and error, for a table.
func Said(r Result) string {
	return fmt.Sprintf("exit %d: %q", r.Exit, firstLine(r.Error, r.Stderr))
}

// established counts the established TCP connections whose local port
// is port (the server's side of them), from /proc/net/tcp.
func established(port int) int {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0
	}
	local := fmt.Sprintf(":%04X ", port)
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[1]+" ", local) && f[3] == "01" {
			n++
		}
	}
	return n
}

// readAll is a file's contents, or what went wrong reading it.
func readAll(name string) string {
	b, err := os.ReadFile(name)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
