package cli

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWatchTUI runs the terminal view for real, under tmux, on a loopback
// transfer this test keeps going, and reads the screen with capture-pane.
func TestWatchTUI(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	bin := filepath.Join(t.TempDir(), "tcpscope")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/tcpscope").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// Everything started here ends before the test does.
	var wg sync.WaitGroup
	defer wg.Wait()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	stop := make(chan struct{})
	defer close(stop)
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(io.Discard, c)
	})
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wg.Go(func() { pacedSender(c, stop) })
	lport := c.LocalAddr().(*net.TCPAddr).Port
	rport := ln.Addr().(*net.TCPAddr).Port
	session := fmt.Sprintf("tcpscope-test-%d", lport)
	cmd := fmt.Sprintf("%s watch --conn 'sport %d dport %d' -i 100ms", bin, lport, rport)
	if out, err := exec.Command("tmux", "new-session", "-d", "-s", session, "-x", "110", "-y", "35", cmd).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	defer exec.Command("tmux", "kill-session", "-t", session).Run()

	capture := func() string {
		out, err := exec.Command("tmux", "capture-pane", "-t", session, "-p").Output()
		if err != nil {
			t.Fatalf("capture-pane: %v", err)
		}
		return string(out)
	}
	var screen string
	waitUntil(10*time.Second, 200*time.Millisecond, func() bool {
		screen = capture()
		return strings.Contains(screen, "what limits it:")
	})
	for _, want := range []string{
		fmt.Sprintf("127.0.0.1:%d → 127.0.0.1:%d", lport, rport),
		"goodput", "peer wnd", "cwnd", "RTT", "limited", "options SACK", "what limits it:", "q: quit",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	// The diagnosis stays on screen while the transfer goes on: it once
	// showed only on the frames where it was recomputed, and the view
	// said "gathering evidence…" four frames in five.
	stamp := regexp.MustCompile(`t=[0-9.]+s`)
	seen := map[string]bool{stamp.FindString(screen): true}
	waitUntil(10*time.Second, 20*time.Millisecond, func() bool {
		out := capture()
		if at := stamp.FindString(out); at != "" && !seen[at] {
			seen[at] = true
			if !strings.Contains(out, "what limits it:") {
				t.Errorf("at %s the diagnosis is gone:\n%s", at, out)
			}
		}
		return len(seen) >= 12
	})
	if len(seen) < 12 {
		t.Errorf("%d frames seen in 10 s", len(seen))
	}
	// q quits: the pane's command ends and tmux closes the session.
	exec.Command("tmux", "send-keys", "-t", session, "q").Run()
	if !waitUntil(3*time.Second, 100*time.Millisecond, func() bool {
		return exec.Command("tmux", "has-session", "-t", session).Run() != nil
	}) {
		t.Error("the view did not quit on q")
	}
}

// TestWatchPicker drives the picker for real, under tmux: the list of two
// loopback transfers this test keeps going, the arrow keys and j/k move
// the choice, Enter follows the chosen (slower) one, v shows every
// variable, Esc goes back to the list and q quits. It reads the screen
// with capture-pane, polling each expected picture with a deadline.
func TestWatchPicker(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the picker is not driven")
	}
	bin := filepath.Join(t.TempDir(), "tcpscope")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/tcpscope").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ln := discardListener(t, &wg)
	defer ln.Close()
	stop := make(chan struct{})
	defer close(stop)
	// A fast transfer and a slow one, 64 times slower.
	var ends []string
	for _, size := range []int{64 << 10, 1 << 10} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ends = append(ends, c.LocalAddr().String())
		wg.Go(func() { pacedWriter(c, stop, size) })
	}
	fast, slow, remote := ends[0], ends[1], ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port

	// A session name of this run's own, killed by that name however the
	// test ends.
	session := fmt.Sprintf("tcpscope-picker-%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := fmt.Sprintf("%s watch 'dport %d' -i 100ms --refresh 300ms", bin, port)
	if out, err := exec.Command("tmux", "new-session", "-d", "-s", session, "-x", "100", "-y", "30", cmd).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "kill-session", "-t", "="+session).Run() })
	// "=" matches the name exactly; a pane is named by its session's
	// with a colon.
	pane := "=" + session + ":"
	capture := func() string {
		out, err := exec.Command("tmux", "capture-pane", "-t", pane, "-p").Output()
		if err != nil {
			return ""
		}
		return string(out)
	}
	var screen string
	await := func(what string, cond func(string) bool) {
		t.Helper()
		if !waitUntil(10*time.Second, 50*time.Millisecond, func() bool { screen = capture(); return cond(screen) }) {
			t.Fatalf("waited 10 s for %s; the screen:\n%s", what, screen)
		}
	}
	keys := func(k ...string) {
		t.Helper()
		if out, err := exec.Command("tmux", append([]string{"send-keys", "-t", pane}, k...)...).CombinedOutput(); err != nil {
			t.Fatalf("send-keys %v: %v\n%s", k, err, out)
		}
	}
	// marked is the local address on the chosen row, "" when none.
	marked := func(s string) string {
		for line := range strings.Lines(s) {
			if strings.Contains(line, "▸") {
				for _, e := range ends {
					if strings.Contains(line, e+" ") {
						return e
					}
				}
			}
		}
		return ""
	}
	rowOf := func(s, addr string) int { return strings.Index(s, addr+" ") }
	await("the list, fastest first", func(s string) bool {
		return strings.Contains(s, fmt.Sprintf("2 connections (dport %d)", port)) && strings.Contains(s, "Enter: follow") &&
			rowOf(s, fast) >= 0 && rowOf(s, slow) > rowOf(s, fast) && marked(s) != ""
	})
	keys("Home")
	await("the choice on the first row, the fast one", func(s string) bool { return marked(s) == fast })
	keys("Down")
	await("Down to choose the slow one", func(s string) bool { return marked(s) == slow })
	keys("Up")
	await("Up to choose the fast one", func(s string) bool { return marked(s) == fast })
	keys("j")
	await("j to choose the slow one", func(s string) bool { return marked(s) == slow })
	keys("Enter")
	title := fmt.Sprintf("tcpscope watch  %s → %s", slow, remote)
	await("the follow view of the chosen, slower, connection", func(s string) bool {
		return strings.Contains(s, title) && strings.Contains(s, "goodput") && strings.Contains(s, "Esc: list")
	})
	keys("v")
	await("every variable", func(s string) bool {
		return strings.Contains(s, title) && strings.Contains(s, "snd_mss") && strings.Contains(s, "segments") &&
			strings.Contains(s, "bytes_acked") && strings.Contains(s, "v: charts")
	})
	// More than the screen holds: j scrolls to the rest.
	keys("j", "j", "j", "j", "j", "j", "j", "j", "j", "j", "j", "j")
	await("the variables scrolled", func(s string) bool { return strings.Contains(s, "snd_cwnd") && !strings.Contains(s, "kernel_len") })
	keys("v")
	await("the charts again", func(s string) bool { return strings.Contains(s, "goodput") && !strings.Contains(s, "snd_cwnd") })
	keys("Escape")
	await("the list again, the slow one still chosen", func(s string) bool {
		return strings.Contains(s, "Enter: follow") && marked(s) == slow
	})
	keys("q")
	if !waitUntil(5*time.Second, 50*time.Millisecond, func() bool {
		return exec.Command("tmux", "has-session", "-t", "="+session).Run() != nil
	}) {
		t.Errorf("q did not quit; the screen:\n%s", capture())
	}
}
