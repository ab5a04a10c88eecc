package engine

import (
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A sender pinned to the end's one CPU gives its thread back, mask and
// all, instead of ending it: a child process started with a parent-death
// signal takes that signal when the thread that started it ends, and the
// lab's hosts start theirs so. A stock iperf3 -s in a lab host took
// SIGHUP mid-test and told the client the server ended the test (state
// 11) when an earlier sender's thread ended.
func TestOneCPUKeepsThread(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil || before.Count() < 2 {
		t.Skip("needs two CPUs this process may run on")
	}
	e := &End{oneCPU: true}
	type pinned struct {
		tid  int
		mask unix.CPUSet
	}
	got := make(chan pinned, 1)
	go func() {
		done := e.toOneCPU()
		var p pinned
		p.tid = unix.Gettid()
		_ = unix.SchedGetaffinity(0, &p.mask)
		done()
		got <- p
	}()
	p := <-got
	if e.oneCPUAt < 0 || p.mask.Count() != 1 || !p.mask.IsSet(e.oneCPUAt) {
		t.Fatalf("the sender's thread was not pinned to CPU %d: %d CPUs allowed", e.oneCPUAt, p.mask.Count())
	}
	task := "/proc/self/task/" + strconv.Itoa(p.tid)
	// Before the fix the runtime ended the thread as the goroutine ended.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(task); err != nil {
			t.Fatalf("thread %d ended with its sender: %v", p.tid, err)
		}
	}
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(p.tid, &after); err != nil {
		t.Fatalf("sched_getaffinity of thread %d: %v", p.tid, err)
	}
	if after != before {
		t.Errorf("thread %d may run on %d CPUs after the sender, %d before", p.tid, after.Count(), before.Count())
	}
}
