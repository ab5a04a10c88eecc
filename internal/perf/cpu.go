package perf

import (
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// cpuClock is this process's CPU time and the wall clock at one moment.
type cpuClock struct {
	wall         time.Time
	user, system time.Duration
}

// readCPUClock reads the process's CPU time (getrusage, every thread),
// as iperf3's cpu_util does; ok is false when the kernel refuses.
func readCPUClock() (c cpuClock, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuClock{}, false
	}
	return cpuClock{wall: time.Now(), user: time.Duration(ru.Utime.Nano()), system: time.Duration(ru.Stime.Nano())}, true
}

// cpuUse is the CPU time spent from a to b as a share of the wall-clock
// time between them, in percent of one CPU; nil when nothing elapsed.
func cpuUse(a, b cpuClock) *model.CPUUse {
	wall := b.wall.Sub(a.wall)
	if wall <= 0 {
		return nil
	}
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(wall) }
	u, s := b.user-a.user, b.system-a.system
	return &model.CPUUse{Total: pct(u + s), User: pct(u), System: pct(s)}
}
