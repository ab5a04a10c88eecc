package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/sockdiag"
	"github.com/tcpscope/tcpscope/internal/watch"
)

// freePort is a loopback TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitUntil asks cond every poll until it holds (true) or timeout has
// passed (false): the tests wait on conditions, never on the clock alone.
func waitUntil(timeout, poll time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}

// waitSockets waits until the sockets filter matches satisfy ok, and
// returns them.
func waitSockets(t *testing.T, filter string, ok func([]model.Socket) bool) []model.Socket {
	t.Helper()
	socks, err := awaitSockets(filter, 10*time.Second, ok)
	if err != nil {
		t.Fatal(err)
	}
	return socks
}

// awaitSockets waits until the sockets filter matches, in the network
// namespace it is called in, satisfy ok, and returns them.
func awaitSockets(filter string, timeout time.Duration, ok func([]model.Socket) bool) ([]model.Socket, error) {
	f, err := sockdiag.Parse(filter)
	if err != nil {
		return nil, err
	}
	c, err := sockdiag.Open(-1)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var socks []model.Socket
	held := waitUntil(timeout, 20*time.Millisecond, func() bool {
		socks, err = c.Dump(f, 0, nil)
		return err != nil || ok(socks)
	})
	switch {
	case err != nil:
		return nil, err
	case !held:
		return nil, fmt.Errorf("%q: the sockets never came: %d now", filter, len(socks))
	}
	return socks, nil
}

// iperf3Loopback runs a stock iperf3 test on loopback for secs seconds at
// 100 Mbit/s, and returns its port, data connection and control
// connection (the client's ends) once the data moves. The transfer is
// stopped when the test ends.
func iperf3Loopback(t *testing.T, secs int) (port int, data, control model.Socket) {
	t.Helper()
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("iperf3 is not installed (make setup installs it)")
	}
	port = freePort(t)
	p := strconv.Itoa(port)
	srv := exec.Command("iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", p)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	waitSockets(t, "sport "+p+" state listening", func(s []model.Socket) bool { return len(s) > 0 })
	cli := exec.Command("iperf3", "-c", "127.0.0.1", "-p", p, "-t", strconv.Itoa(secs), "-b", "100M")
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Process.Kill(); cli.Wait() })
	// The client's two ends: the control connection, then the data
	// connection, which has moved a megabyte once the transfer is on.
	socks := waitSockets(t, "dport "+p+" state established", func(s []model.Socket) bool {
		return len(s) == 2 && max(s[0].TCP.BytesAcked.V, s[1].TCP.BytesAcked.V) >= model.MiB
	})
	if socks[0].TCP.BytesAcked.V < socks[1].TCP.BytesAcked.V {
		socks[0], socks[1] = socks[1], socks[0]
	}
	return port, socks[0], socks[1]
}

// frames decodes --json-stream output.
func frames(t *testing.T, out string) []watch.Frame {
	t.Helper()
	var fs []watch.Frame
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var f watch.Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("frame %d: %v", len(fs), err)
		}
		fs = append(fs, f)
	}
	return fs
}

// `watch --conn "dport 5201"` on a stock iperf3 test matches its control
// and its data connection. It follows the data connection, the busy one,
// and names the control connection and how to follow it instead. It used
// to refuse the filter.
func TestWatchFollowsTheBusiestMatch(t *testing.T) {
	port, data, control := iperf3Loopback(t, 60)
	filter := fmt.Sprintf("dport %d", port)
	code, out, errOut := run("watch", "--conn", filter, "--json-stream", "-i", "100ms", "-c", "10")
	if code != 0 {
		t.Fatalf("watch --conn %q: exit %d: %s", filter, code, errOut)
	}
	errOut = unwrapNotes(errOut)
	fs := frames(t, out)
	if len(fs) != 10 {
		t.Fatalf("%d frames, want 10", len(fs))
	}
	for i, f := range fs {
		if len(f.Rows) != 1 || f.Rows[0].Cookie != data.Cookie {
			t.Fatalf("frame %d follows %v, not the data connection %s", i, f.Rows, data.Local)
		}
	}
	// The second sample is a tick after the first, whose look took a
	// quarter second; it used to come at once, its rate over a
	// millisecond or so and often 0.
	if d := fs[1].At - fs[0].At; d < 100*time.Millisecond {
		t.Errorf("the second sample came %v after the first, under the 100ms interval", d)
	}
	for _, want := range []string{
		fmt.Sprintf("2 connections match %q; following the busiest, %s → %s", filter, data.Local, data.Remote),
		fmt.Sprintf("also %s → %s (idle)", control.Local, control.Remote),
		fmt.Sprintf(`--conn "sport %d dport %d"`, control.Local.Port(), port),
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("more than one line on stderr:\n%s", errOut)
	}
}

// Three transfers match, each eight times the rate of the next: --conn
// follows the fastest and names the other two, busier first, with a
// filter for one of them.
func TestWatchFollowsTheBusiestOfThree(t *testing.T) {
	var wg sync.WaitGroup
	defer wg.Wait()
	ln := discardListener(t, &wg)
	defer ln.Close()
	stop := make(chan struct{})
	defer close(stop)
	// Slowest first: 1, 8 and 64 KiB every 2 ms.
	var ends []net.Addr
	for _, size := range []int{1 << 10, 8 << 10, 64 << 10} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ends = append(ends, c.LocalAddr())
		wg.Go(func() { pacedWriter(c, stop, size) })
	}
	port := ln.Addr().(*net.TCPAddr).Port
	filter := fmt.Sprintf("dport %d", port)
	waitSockets(t, filter, func(s []model.Socket) bool {
		return len(s) == 3 && min(s[0].TCP.BytesAcked.V, s[1].TCP.BytesAcked.V, s[2].TCP.BytesAcked.V) > 0
	})
	code, out, errOut := run("watch", "--conn", filter, "--json-stream", "-i", "100ms", "-c", "3")
	if code != 0 {
		t.Fatalf("watch --conn %q: exit %d: %s", filter, code, errOut)
	}
	errOut = unwrapNotes(errOut)
	fast, mid, slow := ends[2].String(), ends[1].String(), ends[0].String()
	for i, f := range frames(t, out) {
		if len(f.Rows) != 1 || f.Rows[0].Local.String() != fast {
			t.Fatalf("frame %d follows %+v, not the fastest, %s", i, f.Rows, fast)
		}
	}
	remote := ln.Addr().String()
	t.Log(strings.TrimSpace(errOut))
	note := fmt.Sprintf("3 connections match %q; following the busiest, %s → %s (", filter, fast, remote)
	i, j, k := strings.Index(errOut, note), strings.Index(errOut, "also "+mid+" → "+remote+" ("), strings.Index(errOut, ", "+slow+" → "+remote+" (")
	if i < 0 || j < i || k < j || !strings.Contains(errOut, fmt.Sprintf(`--conn "sport %d dport %d"`, ends[1].(*net.TCPAddr).Port, port)) {
		t.Errorf("stderr does not name the fastest, then the others busier first:\n%s", errOut)
	}
}

// Once the followed connection has two samples, every frame of a steady
// transfer carries the running diagnosis. It used to be only on the
// frames where it was recomputed, twice a second: one in five at -i
// 100ms, and at -i 500ms every other, for the jitter of the ticks.
func TestWatchDiagnosisOnEveryFrame(t *testing.T) {
	port, data, _ := iperf3Loopback(t, 60)
	exact := fmt.Sprintf("sport %d dport %d", data.Local.Port(), port)
	for _, c := range []struct{ interval, count string }{{"100ms", "15"}, {"500ms", "6"}} {
		code, out, errOut := run("watch", "--conn", exact, "--json-stream", "-i", c.interval, "-c", c.count)
		if code != 0 {
			t.Fatalf("watch --conn %q: exit %d: %s", exact, code, errOut)
		}
		var got strings.Builder
		for _, f := range frames(t, out) {
			if len(f.Diagnosis) > 0 {
				got.WriteByte('D')
			} else {
				got.WriteByte('.')
			}
		}
		if want := "." + strings.Repeat("D", got.Len()-1); got.String() != want {
			t.Errorf("-i %s: frames with a diagnosis %s, want %s", c.interval, got.String(), want)
		}
	}
}

// At the end of an iperf3 test the data connection closes while the
// control connection exchanges the results: that is not a transfer to go
// on with, and the watch ends with the data connection closed.
func TestWatchEndsWithTheTransfer(t *testing.T) {
	port, data, _ := iperf3Loopback(t, 2)
	code, out, errOut := run("watch", "--conn", fmt.Sprintf("dport %d", port), "--json-stream", "-i", "100ms", "-c", "100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	fs := frames(t, out)
	if len(fs) < 2 || len(fs) == 100 {
		t.Fatalf("%d frames", len(fs))
	}
	for i, f := range fs[:len(fs)-1] {
		if len(f.Rows) != 1 || f.Rows[0].Cookie != data.Cookie {
			t.Fatalf("frame %d follows %v, not the data connection %s", i, f.Rows, data.Local)
		}
	}
	if last := fs[len(fs)-1]; len(last.Rows) != 0 || len(last.Closed) != 1 || last.Closed[0].Cookie != data.Cookie {
		t.Errorf("last frame %+v, want the data connection closed", last)
	}
}

// unwrapNotes joins the lines of each of watch's notes on stderr, which
// are wrapped to the width: a note's lines after its first are indented.
func unwrapNotes(s string) string { return strings.ReplaceAll(s, "\n  ", " ") }

// pacedSender writes to c, 64 KiB every 2 ms, until stop or an error.
func pacedSender(c net.Conn, stop <-chan struct{}) { pacedWriter(c, stop, 64<<10) }

// pacedWriter writes size bytes to c every 2 ms, until stop or an error.
func pacedWriter(c net.Conn, stop <-chan struct{}, size int) {
	buf := make([]byte, size)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		c.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

// Two transfers match; the followed one closes while the other goes on:
// the watch follows the other, says so, and carries on.
func TestWatchGoesOnWithAnotherBusyMatch(t *testing.T) {
	// Everything started here ends before the test does.
	var wg sync.WaitGroup
	defer wg.Wait()
	ln := discardListener(t, &wg)
	defer ln.Close()
	stop := make(chan struct{})
	defer close(stop)
	conns := map[int]net.Conn{}
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[c.LocalAddr().(*net.TCPAddr).Port] = c
		wg.Go(func() { pacedSender(c, stop) })
	}
	port := ln.Addr().(*net.TCPAddr).Port
	filter := fmt.Sprintf("dport %d", port)
	waitSockets(t, filter, func(s []model.Socket) bool {
		return len(s) == 2 && min(s[0].TCP.BytesAcked.V, s[1].TCP.BytesAcked.V) > 0
	})

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errOut := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		code := Main(ctx, []string{"watch", "--conn", filter, "--json-stream", "-i", "100ms", "-c", "600"}, pw, errOut)
		pw.Close()
		done <- code
	}()
	finish := sync.OnceValue(func() int {
		cancel()
		io.Copy(io.Discard, pr)
		return <-done
	})
	defer finish()
	sc := bufio.NewScanner(pr)
	sc.Buffer(nil, 1<<24)
	next := func() watch.Frame {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("the watch ended: %v; stderr: %s", sc.Err(), errOut.String())
		}
		var f watch.Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	var first watch.Row
	for range 3 {
		f := next()
		if len(f.Rows) != 1 || first.Cookie != 0 && f.Rows[0].Cookie != first.Cookie {
			t.Fatalf("frame %+v", f.Rows)
		}
		first = f.Rows[0]
	}
	conns[int(first.Local.Port())].Close()
	// Frames of the closing connection, then one with it closed and the
	// other followed from its first sample, and the other's after.
	var f watch.Frame
	for f = next(); len(f.Closed) == 0; f = next() {
		if len(f.Rows) != 1 || f.Rows[0].Cookie != first.Cookie {
			t.Fatalf("while closing, frame %+v", f.Rows)
		}
	}
	if f.Closed[0].Cookie != first.Cookie || len(f.Rows) != 1 || !f.Rows[0].New || f.Rows[0].Cookie == first.Cookie {
		t.Fatalf("the frame after the close: rows %+v, closed %+v", f.Rows, f.Closed)
	}
	other := f.Rows[0]
	for i := range 5 {
		if f := next(); len(f.Rows) != 1 || f.Rows[0].Cookie != other.Cookie || i > 0 && len(f.Diagnosis) == 0 {
			t.Fatalf("frame %d after the switch: rows %+v, %d findings", i, f.Rows, len(f.Diagnosis))
		}
	}
	if code := finish(); code != 0 {
		t.Errorf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(unwrapNotes(errOut.String())), "\n")
	want := fmt.Sprintf("%s → %s closed; following %s → %s, the busiest other connection %q matches", first.Local, first.Remote, other.Local, other.Remote, filter)
	if len(lines) != 2 || !strings.Contains(lines[0], "2 connections match") || !strings.Contains(lines[1], want) {
		t.Errorf("stderr:\n%s\nwant the pick, then %q", errOut.String(), want)
	}
}

// lockedBuffer is a strings.Builder safe to write from one goroutine and
// read from another.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The piped list is as wide as $COLUMNS says, else 80 columns (in runes),
// wider showing every column; on its first sample a connection's rate is
// absent, not 0.
func TestWatchListWidth(t *testing.T) {
	port, data, _ := iperf3Loopback(t, 30)
	list := func(columns string, args ...string) []string {
		t.Helper()
		t.Setenv("COLUMNS", columns)
		code, out, errOut := run(append(append([]string{"watch", "-a"}, args...), "dport", strconv.Itoa(port))...)
		if code != 0 {
			t.Fatalf("watch %q, COLUMNS=%q: exit %d: %s", args, columns, code, errOut)
		}
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	// The list's row of a connection, by its local port.
	rowOf := func(lines []string, s model.Socket) string {
		for _, l := range lines {
			if strings.Contains(l, fmt.Sprintf(":%d ", s.Local.Port())) {
				return l
			}
		}
		t.Fatalf("no row of %s in %q", s.Local, lines)
		return ""
	}
	for _, columns := range []string{"", "80", "200"} {
		lines := list(columns, "-c", "2")
		width := 80
		if columns == "200" {
			width = 200
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("COLUMNS=%q: a line of %d runes: %q", columns, n, l)
			}
		}
		header := strings.Fields(lines[1])
		for _, h := range []string{"local", "remote", "goodput", "process"} {
			if !slices.Contains(header, h) {
				t.Errorf("COLUMNS=%q: no %s column: %q", columns, h, lines[1])
			}
		}
		if columns == "200" {
			for _, h := range []string{"state", "cc", "RTT", "cwnd", "retr"} {
				if !slices.Contains(header, h) {
					t.Errorf("COLUMNS=%q: no %s column: %q", columns, h, lines[1])
				}
			}
		}
		if row := rowOf(lines, data); !strings.Contains(row, "bit/s  →") || !strings.Contains(row, "iperf3/") {
			t.Errorf("COLUMNS=%q: the data connection's row %q", columns, row)
		}
	}
	// One sample: no rate yet.
	if row := rowOf(list("200", "-c", "1"), data); strings.Contains(row, "bit/s") || !strings.Contains(row, "estab") {
		t.Errorf("a first sample's row %q", row)
	}
}

// watch --conn on a real transfer, with COLUMNS=80: every line it writes,
// the followed rows, the diagnosis and the note on stderr naming the
// other match, fits 80 columns (in runes), and so does replay's of a
// recording of it. At 200 columns the rows are wider, with more columns.
func TestWatchFollowWidth(t *testing.T) {
	port, data, control := iperf3Loopback(t, 30)
	filter := fmt.Sprintf("dport %d", port)
	rec := t.TempDir() + "/rec.jsonl"
	check := func(what string, width int, text string) []string {
		t.Helper()
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		for i, l := range lines {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("%s: line %d is %d runes wide, over %d: %q", what, i+1, n, width, l)
			}
		}
		return lines
	}
	t.Setenv("COLUMNS", "80")
	code, out, errOut := run("watch", "--conn", filter, "-i", "100ms", "-c", "12", "--record", rec)
	if code != 0 {
		t.Fatalf("watch --conn %q: exit %d: %s", filter, code, errOut)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	lines := check("stdout", 80, out)
	check("stderr", 80, errOut)
	if len(lines) < 12 || !strings.HasPrefix(lines[0], fmt.Sprintf("following %s → %s", data.Local, data.Remote)) {
		t.Errorf("stdout does not follow the data connection %s:\n%s", data.Local, out)
	}
	if !strings.Contains(out, "  diagnosis: ") || !strings.Contains(out, "Mbit/s →") {
		t.Errorf("no diagnosis, or no rate sent:\n%s", out)
	}
	if note := unwrapNotes(errOut); !strings.Contains(note, fmt.Sprintf("also %s → %s (idle)", control.Local, control.Remote)) ||
		!strings.Contains(errOut, fmt.Sprintf(`--conn "sport %d dport %d"`, control.Local.Port(), port)) {
		t.Errorf("stderr does not name the control connection, with a filter for it whole:\n%s", errOut)
	}
	code, replayed, errOut := run("replay", rec)
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	check("replay", 80, replayed)
	if !strings.Contains(replayed, "  diagnosis: ") {
		t.Errorf("replay lost the diagnosis:\n%s", replayed)
	}
	t.Setenv("COLUMNS", "200")
	code, wide, errOut := run("replay", rec)
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	long := 0
	for _, l := range check("replay at 200", 200, wide) {
		long = max(long, utf8.RuneCountInString(l))
	}
	if long <= 80 || !strings.Contains(wide, "minRTT") {
		t.Errorf("at 200 columns no wider rows (widest %d):\n%s", long, wide)
	}
}

// discardListener is a loopback listener whose connections are read and
// discarded, on wg's goroutines, until it is closed and they are.
func discardListener(t *testing.T, wg *sync.WaitGroup) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { defer c.Close(); io.Copy(io.Discard, c) })
		}
	})
	return ln
}
