package iperf3_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/perf/perftest"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// -A n,m against a stock iperf3 server: the client sends iperf3's
// server_affinity, and the iperf3 process is pinned to m while the test
// runs (read from its /proc status).
func TestIperf3ServerAffinity(t *testing.T) {
	requireIperf3(t)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || !set.IsSet(1) || set.Count() < 2 {
		t.Skip("needs CPUs 0 and 1")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(iperf3Bin(), "-s", "-1", "-B", "127.0.0.1", "-p", fmt.Sprint(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	perftest.WaitListening(t, port)
	cpus := func() string {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	before := cpus()
	cpu := 1
	done := make(chan error, 1)
	go func() {
		_, err := (&iperf3.Client{Version: "test"}).Run(context.Background(), fmt.Sprintf("127.0.0.1:%d", port),
			model.TestConfig{Duration: 2 * time.Second, ServerCPU: &cpu})
		done <- err
	}()
	for seen := before; ; time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the test ended (%v) with the server's CPUs %q, never 1 (before: %q)", err, seen, before)
		default:
		}
		if seen = cpus(); seen == "1" {
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A stock iperf3 client's -A n,m asks a tcpscope server to pin itself to
// CPU m (server_affinity). The server follows the native protocol's
// policy: pinned for the test, and restored after, when it allows it
// (AllowAffinity); otherwise never pinned, and its log warns. The
// server is this test's own process: its mask is read while the client
// runs.
func TestServeIperf3ServerAffinity(t *testing.T) {
	requireIperf3(t)
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil || !before.IsSet(0) || before.Count() < 2 {
		t.Skip("needs CPU 0 and another")
	}
	wantCPUs := threadCPUs(t)[fmt.Sprint(unix.Gettid())]
	pinnedTo0 := func() bool {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			t.Fatal(err)
		}
		return set.Count() == 1 && set.IsSet(0)
	}
	for _, allow := range []bool{false, true} {
		logs := &lockedBuffer{}
		srv := perf.Add(&serve.Server{Version: "test", AllowAffinity: allow, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		srv.Handle(&iperf3.Handler{})
		addr := perftest.Serve(t, srv)
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(iperf3Bin(), "-c", "127.0.0.1", "-p", port, "-A", "0,0", "-t", "1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		pinned, polls := false, 0
	run:
		for {
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("allow %v: iperf3 -A 0,0: %v\n%s", allow, err, out.Bytes())
				}
				break run
			default:
			}
			pinned = pinned || pinnedTo0()
			polls++
			time.Sleep(5 * time.Millisecond)
		}
		if pinned != allow {
			t.Errorf("allow %v: the server pinned to CPU 0 during the test: %v (%d looks)", allow, pinned, polls)
		}
		// The pin ends with the server's end of the test, which may
		// outlast the client by a moment; the warning is logged as the
		// test starts.
		warning := "ignored: the server allows it only with --allow-affinity"
		deadline := time.Now().Add(5 * time.Second)
		for pinnedTo0() || !allow && !strings.Contains(logs.String(), warning) {
			if time.Now().After(deadline) {
				t.Fatalf("allow %v: 5 s after the test, pinned %v, log:\n%s", allow, pinnedTo0(), logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if allow && strings.Contains(logs.String(), "asked to pin the server") {
			t.Errorf("allow %v: the server warned of the pin:\n%s", allow, logs.String())
		}
		// Every thread's, not only this one's: a sender pinned to one CPU
		// (engine.EndOptions.OneCPU) for this or an earlier test gives its
		// thread's mask back as it ends, which may outlast the test by a
		// moment. (It used to end locked instead: on the main thread,
		// which the runtime parks rather than ends, that left an idle
		// thread pinned for good.)
		for tid, cpus := range pinnedThreads(t, wantCPUs, 5*time.Second) {
			t.Errorf("allow %v: thread %s may run on CPUs %s 5 s after the test, %s before it", allow, tid, cpus, wantCPUs)
		}
	}
}

// pinnedThreads waits up to wait until every thread of this process
// may run on want (a Cpus_allowed_list), and returns those that still
// may not, by thread ID.
func pinnedThreads(t *testing.T, want string, wait time.Duration) map[string]string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		off := map[string]string{}
		for tid, cpus := range threadCPUs(t) {
			if cpus != want {
				off[tid] = cpus
			}
		}
		if len(off) == 0 || time.Now().After(deadline) {
			return off
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// threadCPUs is the CPUs each of this process's threads may run on, by
// thread ID (Cpus_allowed_list).
func threadCPUs(t *testing.T) map[string]string {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // exited since the listing
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				out[task.Name()] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// lockedBuffer is a log's buffer, written by the server's goroutines and
// read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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
