package perf_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/perf/perftest"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// allowed is each thread's Cpus_allowed_list, from /proc.
func allowed(t *testing.T) map[string]string {
	t.Helper()
	paths, _ := filepath.Glob("/proc/self/task/*/status")
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				out[p] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

func needCPUs(t *testing.T) unix.CPUSet {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() < 2 || !set.IsSet(1) {
		t.Skip("needs CPUs 0 and 1")
	}
	return set
}

// engine.PinProcess pins every thread, and threads started after it, to the
// CPU; restore gives them all the mask back.
func TestPinProcess(t *testing.T) {
	needCPUs(t)
	before := allowed(t)
	restore, err := engine.PinProcess(1)
	if err != nil {
		t.Fatal(err)
	}
	// A new thread inherits the pin.
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // a thread of its own, kept until the goroutine ends
		<-done
	}()
	for p, cpus := range allowed(t) {
		if cpus != "1" {
			t.Errorf("%s: CPUs %s after pinning to 1", p, cpus)
		}
	}
	close(done)
	restore()
	for p, cpus := range allowed(t) {
		if want, ok := before[p]; ok && cpus != want {
			t.Errorf("%s: CPUs %s after restoring, want %s", p, cpus, want)
		}
	}
	if _, err := engine.PinProcess(4096); err == nil {
		t.Error("CPU 4096 taken")
	}
}

// A client's -A n,m: a server that allows it pins its process to m for
// the test and says so (no warning), and unpins after; one that does
// not allow it runs the test unpinned and the client warns.
func TestServerAffinity(t *testing.T) {
	needCPUs(t)
	before := allowed(t)
	for _, allow := range []bool{false, true} {
		addr := perftest.Serve(t, perf.Add(&serve.Server{AllowAffinity: allow}))
		cpu := 1
		pinnedSeen := make(chan bool, 1)
		c := &perf.Client{Observer: observerFunc(func() {
			// Begin: the streams are set up, the server pinned if it would.
			var set unix.CPUSet
			_ = unix.SchedGetaffinity(0, &set)
			pinnedSeen <- set.Count() == 1 && set.IsSet(1)
		})}
		run, err := c.Run(context.Background(), addr, model.TestConfig{Duration: 200 * time.Millisecond, ServerCPU: &cpu})
		if err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(strings.Join(run.Warnings, "\n"), "did not pin itself to CPU 1")
		if pinned := <-pinnedSeen; pinned != allow || warned == allow {
			t.Fatalf("allow %v: pinned during the test %v, warned %v (%q)", allow, pinned, warned, run.Warnings)
		}
		// The server unpins as its test ends, after the client has its
		// results: wait for it.
		deadline := time.Now().Add(5 * time.Second)
		for {
			ok := true
			for p, cpus := range allowed(t) {
				if want, known := before[p]; known && cpus != want {
					ok = false
				}
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("allow %v: still pinned after the test: %v", allow, allowed(t))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// observerFunc calls f at Begin.
type observerFunc func()

func (f observerFunc) Begin(*model.Run)                     { f() }
func (f observerFunc) Interval(model.Side, *model.Interval) {}
