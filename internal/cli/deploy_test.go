package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The systemd unit in deploy/ runs a command line this binary takes, with
// the hardening the docs promise, and systemd itself finds nothing wrong
// with it (where systemd-analyze is installed).
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile("../../deploy/tcpscope-server.service")
	if err != nil {
		t.Fatal(err)
	}
	var exec0 string
	for _, line := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			exec0 = v
		}
	}
	args := strings.Fields(exec0)
	if len(args) < 2 || filepath.Base(args[0]) != "tcpscope" || args[1] != "server" {
		t.Fatalf("ExecStart %q", exec0)
	}
	cmd := newServerCmd(nil, io.Discard, io.Discard)
	if err := cmd.ParseFlags(args[2:]); err != nil {
		t.Errorf("ExecStart's flags: %v", err)
	}
	for _, want := range []string{"DynamicUser=yes", "CapabilityBoundingSet=\n", "NoNewPrivileges=yes", "ProtectSystem=strict",
		"ProtectHome=yes", "PrivateTmp=yes", "MemoryDenyWriteExecute=yes", "SystemCallFilter=@system-service", "LimitNOFILE=65536", "Restart=always"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("the unit lacks %q", want)
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: the unit's syntax is not checked by systemd")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// verify checks that ExecStart's program exists: any executable does.
	copyUnit := filepath.Join(t.TempDir(), "tcpscope-server.service")
	if err := os.WriteFile(copyUnit, bytes.ReplaceAll(unit, []byte(args[0]), []byte(self)), 0o644); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	v := exec.Command(analyze, "verify", "--man=no", copyUnit)
	v.Stderr, v.Stdout = &errb, &errb
	if err := v.Run(); err != nil || strings.TrimSpace(errb.String()) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, errb.String())
	}
}

// tcpscope man writes a page per command, flags included.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := run("man", "--dir", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	page, err := os.ReadFile(filepath.Join(dir, "tcpscope-server.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".TH \"TCPSCOPE-SERVER\" \"1\"", "limits", "require-token", "tls-cert"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("tcpscope-server.1 lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "tcpscope-test.1")); err != nil {
		t.Error(err)
	}
}
