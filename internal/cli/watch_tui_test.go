package cli

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1<<16)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		buf := make([]byte, 1<<16)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := c.Write(buf); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	lport := c.LocalAddr().(*net.TCPAddr).Port
	rport := ln.Addr().(*net.TCPAddr).Port
	session := fmt.Sprintf("tcpscope-test-%d", lport)
	cmd := fmt.Sprintf("%s watch --conn 'sport %d dport %d' -i 100ms", bin, lport, rport)
	if out, err := exec.Command("tmux", "new-session", "-d", "-s", session, "-x", "110", "-y", "35", cmd).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	defer exec.Command("tmux", "kill-session", "-t", session).Run()

	var screen string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, err := exec.Command("tmux", "capture-pane", "-t", session, "-p").Output()
		if err != nil {
			t.Fatalf("capture-pane: %v", err)
		}
		screen = string(out)
		if strings.Contains(screen, "what limits it:") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
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
	deadline = time.Now().Add(10 * time.Second)
	for len(seen) < 12 && time.Now().Before(deadline) {
		out, err := exec.Command("tmux", "capture-pane", "-t", session, "-p").Output()
		if err != nil {
			t.Fatalf("capture-pane: %v", err)
		}
		at := stamp.FindString(string(out))
		if at == "" || seen[at] {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		seen[at] = true
		if !strings.Contains(string(out), "what limits it:") {
			t.Errorf("at %s the diagnosis is gone:\n%s", at, out)
		}
	}
	if len(seen) < 12 {
		t.Errorf("%d frames seen in 10 s", len(seen))
	}
	// q quits: the pane's command ends and tmux closes the session.
	exec.Command("tmux", "send-keys", "-t", session, "q").Run()
	deadline = time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if exec.Command("tmux", "has-session", "-t", session).Run() != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Error("the view did not quit on q")
}
