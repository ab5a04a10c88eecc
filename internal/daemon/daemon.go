package daemon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// EnvReady names the environment variable that makes a process a daemon
// child: its value is the descriptor of the pipe it reports on.
const EnvReady = "TCPSCOPE_DAEMON_READY"

// readyWord is what a child writes once ready; anything else is the line
// saying why it failed.
const readyWord = "ready"

// ChildError is a child that failed before it was ready: Line is what it
// said (its error, one line), Code its exit status (-1 if it did not exit).
type ChildError struct {
	Line string
	Code int
}

func (e *ChildError) Error() string { return e.Line }

// Start runs exe with args as a daemon: a new session, stdin on
// /dev/null, stdout and stderr appended to logfile (or on /dev/null when it
// is ""). It returns the child's pid once the child reports ready, a
// *ChildError when it fails first, or an error when it says nothing for
// wait (the child is then killed: a daemon nobody knows the state of is
// worse than none).
func Start(exe string, args []string, logfile string, wait time.Duration) (int, error) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, fmt.Errorf("daemon: %w", err)
	}
	defer null.Close()
	out := null
	if logfile != "" {
		out, err = os.OpenFile(logfile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return 0, fmt.Errorf("daemon: log file: %w", err)
		}
		defer out.Close()
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("daemon: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, out, out
	cmd.ExtraFiles = []*os.File{w} // descriptor 3 in the child
	cmd.Env = append(os.Environ(), EnvReady+"=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close() // the child's copy is the only writer: EOF when it closes or dies
	if err != nil {
		return 0, fmt.Errorf("daemon: start %s: %w", exe, err)
	}
	// One line: "ready", or why not. The child may keep the pipe open
	// after it (a program it starts inherits it), so no waiting for EOF.
	_ = r.SetReadDeadline(time.Now().Add(wait))
	said, rerr := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	line := strings.TrimSpace(said)
	if line == readyWord {
		pid := cmd.Process.Pid
		_ = cmd.Process.Release()
		return pid, nil
	}
	if errors.Is(rerr, os.ErrDeadlineExceeded) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, fmt.Errorf("daemon: the background process said nothing within %v (killed)", wait)
	}
	werr := cmd.Wait()
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if line == "" {
		line = fmt.Sprintf("the background process ended before it was ready (%v)", werr)
	}
	return 0, &ChildError{Line: line, Code: code}
}

// Reporter is a daemon child's pipe to the process that started it. A nil
// Reporter (not a daemon child) reports nothing.
type Reporter struct{ f *os.File }

// Child returns the Reporter of a daemon child, or nil when this process
// is not one. It clears EnvReady, so that programs the child starts are
// not taken for daemon children.
func Child() *Reporter {
	v, ok := os.LookupEnv(EnvReady)
	if !ok {
		return nil
	}
	os.Unsetenv(EnvReady)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	return &Reporter{f: os.NewFile(uintptr(fd), "daemon-ready")}
}

// Ready tells the parent the child is ready; the parent then exits 0.
func (r *Reporter) Ready() { r.say(readyWord) }

// Fail tells the parent why the child failed, in one line.
func (r *Reporter) Fail(line string) { r.say(line) }

func (r *Reporter) say(s string) {
	if r == nil || r.f == nil {
		return
	}
	_, _ = r.f.Write(append(bytes.TrimSpace([]byte(s)), '\n'))
	r.f.Close()
	r.f = nil
}

// WritePidfile writes this process's pid to path; remove deletes the file
// again (at exit), unless another process has written its own there since.
func WritePidfile(path string) (remove func(), err error) {
	pid := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(path, []byte(pid+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write pid file: %w", err)
	}
	return func() {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == pid {
			os.Remove(path)
		}
	}, nil
}
