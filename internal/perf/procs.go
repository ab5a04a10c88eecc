package perf

import (
	"os"
	"runtime"
	"sync"
)

// The process's scheduler slots (Go's Ps, GOMAXPROCS), for two things
// (issue 15).
//
// Fairness among a server's concurrent tests. With the
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
//
// Streams off the poller (blocking_linux.go). A goroutine in a blocking
// system call keeps its P until the runtime's monitor takes it back,
// which it does only for a call that spans one of its looks, and it
// looks as seldom as every 10 ms when the process seems idle: with every
// P held by a stream blocked in the kernel, the other goroutines (the
// control connection, timers, the lab's path emulator) waited up to that
// long. Measured in the lab: a -R test of the precision suite (128 KiB
// receive window, 20 ms) ran at 27.1-28.8 Mbit/s with both ends'
// streams detached in one process against 30.8-31.1 with either alone,
// and its verdict missed once in three. So each detached stream adds a
// P while its socket is open: the rest of the process always has the
// CPUs' worth.

const (
	// fairFloor is the most streams the default GOMAXPROCS serves before
	// it is raised (when the CPUs are fewer).
	fairFloor = 8
	// fairCeiling bounds the raised GOMAXPROCS: Ps beyond the streams a
	// server admits would only be idle.
	fairCeiling = 256
)

// Procs steers GOMAXPROCS for a process's tests: it counts the streams
// of a server's admitted tests, from admission (so that the Ps are there
// before the bytes move and while later tests' handshakes run) to
// release, and the streams detached from the poller while their sockets
// are open. GOMAXPROCS is the runtime's default plus the detached
// streams, or, while the admitted streams are more than fairFloor and
// that, a power of two at least their number; the runtime's default once
// both are gone. A GOMAXPROCS set in the environment is the user's: it
// is left alone, and no stream is detached (its P could not be added).
// One Procs serves a process (the command line makes one); the zero
// value is ready. A nil one does nothing and detaches nothing: the
// engine's tests and library users keep Go's poller unless they ask.
type Procs struct {
	mu       sync.Mutex
	streams  int // of admitted tests
	detached int
	base     int // GOMAXPROCS before it was raised; 0 while not raised
	// procs and reset stand for runtime.GOMAXPROCS and
	// runtime.SetDefaultGOMAXPROCS (tests replace them); userSet for a
	// GOMAXPROCS in the environment.
	procs   func(int) int
	reset   func()
	userSet func() bool
}

// join counts n admitted streams in; the returned function counts them
// out (once).
func (f *Procs) join(n int) (leave func()) {
	if f == nil {
		return func() {}
	}
	return f.add(&f.streams, n)
}

// hold counts a detached stream in, if streams may be detached; the
// returned function counts it out (once).
func (f *Procs) hold() (release func(), ok bool) {
	if f == nil {
		return nil, false
	}
	f.mu.Lock()
	f.init()
	user := f.userSet()
	f.mu.Unlock()
	if user {
		return nil, false
	}
	return f.add(&f.detached, 1), true
}

func (f *Procs) add(count *int, n int) func() {
	f.mu.Lock()
	*count += n
	f.fit()
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			*count -= n
			f.fit()
			f.mu.Unlock()
		})
	}
}

// init fills in the runtime's functions; f.mu is held.
func (f *Procs) init() {
	if f.procs == nil {
		f.procs, f.reset = runtime.GOMAXPROCS, runtime.SetDefaultGOMAXPROCS
	}
	if f.userSet == nil {
		f.userSet = func() bool { return os.Getenv("GOMAXPROCS") != "" }
	}
}

// fit sets GOMAXPROCS for the streams counted; f.mu is held.
func (f *Procs) fit() {
	f.init()
	if f.base == 0 && f.userSet() {
		return
	}
	base := f.base
	if base == 0 {
		base = f.procs(0)
	}
	want := base + f.detached
	if f.streams > max(base, fairFloor) {
		fair := 1
		for fair < f.streams {
			fair *= 2
		}
		want = max(want, fair)
	}
	want = min(want, fairCeiling)
	if want <= base {
		if f.base != 0 {
			f.reset()
			f.base = 0
		}
		return
	}
	if cur := f.procs(0); want != cur {
		f.base = base
		f.procs(want)
	}
}
