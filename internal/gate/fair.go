package gate

import (
	"os"
	"runtime"
	"sync"
)

// Fairness among a server's concurrent tests (issue 15). With the
// runtime's default GOMAXPROCS (the CPUs, 2 on a small VM), 64 streams'
// goroutines share 2 Ps: a goroutine whose socket always has data never
// blocks and keeps its P for the runtime's 10 ms time slice while the
// others wait in the run queues. A reader that waits reads late, its
// receive window stays full, and the kernel's receive-buffer autotuning
// (rcv_space) grows only for the streams read often: measured at 64
// tests, the slow streams were receive-window-limited 85–90% of the
// time with rcv_space 0.7–4 MB against 14–22 MB for the fast ones, and
// stayed slow (Jain 0.92–0.94; 64 iperf3 processes: 0.96–0.98). With a
// P for each stream, each goroutine mostly keeps a thread of its own
// and the kernel's scheduler shares the CPUs among the threads as it
// does among 64 processes: Jain 0.97–0.99 over the same rounds, at no
// more CPU per byte (docs/BENCHMARKS.md). A test's own few streams
// (up to fairFloor) are left to the runtime's default, so a single
// test runs as before. Streams count from their test's admission, so
// the Ps are there before the bytes move and while later tests'
// handshakes run.

const (
	// fairFloor is the most streams the default GOMAXPROCS serves before
	// it is raised (when the CPUs are fewer).
	fairFloor = 8
	// fairCeiling bounds the raised GOMAXPROCS: Ps beyond the streams a
	// server admits would only be idle.
	fairCeiling = 256
)

// fairShare counts the streams of a server's admitted tests, from
// admission (so that the threads are there before the bytes move and
// while later tests' handshakes run) to release, and raises GOMAXPROCS to a power of two at least their number
// while they are more than fairFloor and the CPUs; when they are fewer
// again it gives the runtime its default back. A GOMAXPROCS set in the
// environment is the user's and is left alone. The zero value is ready;
// a nil one (a client's end) does nothing.
type fairShare struct {
	mu      sync.Mutex
	streams int
	base    int // GOMAXPROCS before it was raised; 0 while not raised
	// procs and reset stand for runtime.GOMAXPROCS and
	// runtime.SetDefaultGOMAXPROCS (tests replace them); userSet for a
	// GOMAXPROCS in the environment.
	procs   func(int) int
	reset   func()
	userSet func() bool
}

// join counts n streams in; the returned function counts them out (once).
func (f *fairShare) join(n int) (leave func()) {
	if f == nil {
		return func() {}
	}
	f.mu.Lock()
	f.streams += n
	f.fit()
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.streams -= n
			f.fit()
			f.mu.Unlock()
		})
	}
}

// fit sets GOMAXPROCS for the streams counted; f.mu is held.
func (f *fairShare) fit() {
	procs, reset, userSet := f.procs, f.reset, f.userSet
	if procs == nil {
		procs, reset = runtime.GOMAXPROCS, runtime.SetDefaultGOMAXPROCS
		userSet = func() bool { return os.Getenv("GOMAXPROCS") != "" }
	}
	if f.base == 0 && userSet() {
		return
	}
	base := f.base
	if base == 0 {
		base = procs(0)
	}
	if f.streams <= max(base, fairFloor) {
		if f.base != 0 {
			reset()
			f.base = 0
		}
		return
	}
	want := 1
	for want < f.streams {
		want *= 2
	}
	want = min(want, fairCeiling)
	if cur := procs(0); want != cur {
		f.base = base
		procs(want)
	}
}
