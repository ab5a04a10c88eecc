package engine

import (
	"runtime"
	"time"
)

// A stream's goroutine whose socket is always ready (a sender whose
// buffer never fills, a receiver that always finds bytes queued) never
// waits, and to the runtime's sysmon it looks like one running without
// a break: every 10 ms sysmon preempts it, and each preemption sets
// sysmon polling every 20 µs again, thousands of wakeups a second that
// take a CPU from the transfer (measured on a loopback sender at
// -l 128K: 3.6k nanosleeps a second, two thirds of its context
// switches). Giving way once a scheduler slice, by choice, is progress
// sysmon sees, and it stays asleep (docs/BENCHMARKS.md).
const yieldEvery = 5 * time.Millisecond

// yielder gives way every yieldEvery; the zero value is ready. Owned by
// one stream's goroutine.
type yielder struct{ next time.Time }

// tick gives way if yieldEvery has passed since it last did.
func (y *yielder) tick() {
	now := time.Now()
	if now.Before(y.next) {
		return
	}
	if !y.next.IsZero() {
		runtime.Gosched()
	}
	y.next = now.Add(yieldEvery)
}
