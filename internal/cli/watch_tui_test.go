package cli

import (
	"fmt"
	"io"
	"net"
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
