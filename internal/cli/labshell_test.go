package cli

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/lab/labtest"
)

// fakeTcpscope is a directory holding an executable named tcpscope (this
// test binary by that name), for a shell to look for.
func fakeTcpscope(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(t.TempDir(), "tcpscope")
	if err := os.Symlink(exe, self); err != nil {
		t.Fatal(err)
	}
	return self
}

// The lab shell's PATH starts with the running binary's directory: "Try:
// tcpscope test $B" must work from bin/tcpscope, not installed, under a
// sudo whose PATH lacks it. A real sh resolves it.
func TestPathFirst(t *testing.T) {
	self := fakeTcpscope(t)
	env := pathFirst([]string{"HOME=/root", "PATH=/usr/bin:/bin"}, filepath.Dir(self))
	if got := strings.Join(env, " "); got != "HOME=/root PATH="+filepath.Dir(self)+":/usr/bin:/bin" {
		t.Errorf("env %s", got)
	}
	c := exec.Command("/bin/sh", "-c", "command -v tcpscope")
	c.Env = env
	out, err := c.Output()
	if err != nil || strings.TrimSpace(string(out)) != self {
		t.Errorf("command -v tcpscope in that env: %q, %v; want %s", out, err, self)
	}
	if got := pathFirst([]string{"TERM=xterm"}, "/opt/x"); strings.Join(got, " ") != "TERM=xterm PATH=/opt/x" {
		t.Errorf("no PATH before: %q", got)
	}
}

// The whole lab shell (root): a shell on host A finds tcpscope on its PATH
// though the PATH it was started with lacks the binary's directory.
func TestLabShellFindsTcpscope(t *testing.T) {
	labtest.Require(t)
	self := fakeTcpscope(t)
	dir := t.TempDir()
	found, shell := filepath.Join(dir, "found"), filepath.Join(dir, "shell")
	script := "#!/bin/sh\ncommand -v tcpscope >" + found + "\n"
	if err := os.WriteFile(shell, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SHELL", shell) // the lab shell runs $SHELL on host A
	t.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	if err := labShell(context.Background(), &labFlags{backend: "auto"}, "lan-1g", "stock", self, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(found)
	if err != nil || strings.TrimSpace(string(got)) != self {
		t.Errorf("command -v tcpscope in the lab shell: %q, %v; want %s", got, err, self)
	}
}
