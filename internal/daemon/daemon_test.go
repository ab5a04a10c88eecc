package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A child that reports ready leaves Start with its pid, running on in a
// session of its own; one that fails first gives its line and exit code;
// one that says nothing is killed after the wait.
func TestStart(t *testing.T) {
	pid, err := Start("/bin/sh", []string{"-c", `echo ready >&3; exec sleep 60`}, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := os.FindProcess(pid)
	defer func() { _ = p.Signal(syscall.SIGKILL); _, _ = p.Wait() }() // the child this test started
	// Field 6 of /proc/PID/stat is the session: its own pid, a leader's.
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 4 || f[3] != strconv.Itoa(pid) {
		t.Errorf("daemon %d not in a session of its own: %s", pid, stat)
	}

	_, err = Start("/bin/sh", []string{"-c", `echo "listen on :5201: address already in use" >&3; exit 11`}, "", 10*time.Second)
	var ce *ChildError
	if !errors.As(err, &ce) || ce.Code != 11 || ce.Line != "listen on :5201: address already in use" {
		t.Errorf("a failing child: %v (%+v)", err, ce)
	}

	start := time.Now()
	_, err = Start("/bin/sh", []string{"-c", `exec sleep 60`}, "", 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "said nothing") || time.Since(start) > 10*time.Second {
		t.Errorf("a silent child: %v after %v", err, time.Since(start))
	}
}

// The child's output goes to the log file, appended.
func TestStartLogfile(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(log, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start("/bin/sh", []string{"-c", `echo out; echo err >&2; echo bye >&3; exit 3`}, log, 10*time.Second)
	var ce *ChildError
	if !errors.As(err, &ce) || ce.Code != 3 {
		t.Fatalf("%v", err)
	}
	b, _ := os.ReadFile(log)
	if string(b) != "before\nout\nerr\n" {
		t.Errorf("log %q", b)
	}
}

// A pid file holds this process's pid and is removed by its remove, but
// not once another process has written its own there.
func TestWritePidfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.pid")
	remove, err := WritePidfile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid file %q", b)
	}
	remove()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("not removed: %v", err)
	}
	remove, _ = WritePidfile(path)
	os.WriteFile(path, []byte("1\n"), 0o644)
	remove()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("another's pid file removed: %v", err)
	}
}
