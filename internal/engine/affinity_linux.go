package engine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PinProcess pins every thread of this process to one CPU
// (sched_setaffinity, iperf3's -A), threads started later too (a thread
// inherits its creator's mask), and returns a function that gives every
// thread the process's previous mask back.
func PinProcess(cpu int) (restore func(), err error) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	if cpu < 0 || cpu >= maxCPU || !before.IsSet(cpu) {
		return nil, fmt.Errorf("CPU %d is not one this process may run on (%d allowed)", cpu, before.Count())
	}
	var one unix.CPUSet
	one.Set(cpu)
	if err := setAll(&one); err != nil {
		return nil, err
	}
	return func() { _ = setAll(&before) }, nil
}

// maxCPU is the CPU count a CPUSet holds (CPU_SETSIZE).
const maxCPU = 1024

// setAll sets mask on each of the process's threads: a Go process has
// several, and sched_setaffinity acts on one. A thread started during a
// pass from one not yet set inherits the old mask, so passes repeat
// until one finds no thread it had not set.
func setAll(mask *unix.CPUSet) error {
	set := map[int]bool{}
	for pass := 0; pass < 10; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("list the process's threads: %w", err)
		}
		fresh := false
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil || set[tid] {
				continue
			}
			fresh = true
			// A thread that exited since the listing is no error.
			if err := unix.SchedSetaffinity(tid, mask); err != nil && err != unix.ESRCH {
				return fmt.Errorf("sched_setaffinity: %w", err)
			}
			set[tid] = true
		}
		if !fresh {
			return nil
		}
	}
	return errors.New("sched_setaffinity: the process kept starting threads")
}

// pinThread restricts the calling thread, which the caller has locked
// to its goroutine, to cpu and returns the function that gives the
// thread its previous mask back. If that fails the thread must not
// serve other goroutines with the narrowed mask: undo reports false and
// the caller leaves the goroutine locked, so the runtime ends the
// thread with it.
func pinThread(cpu int) (undo func() bool, err error) {
	var before, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		return nil, fmt.Errorf("sched_setaffinity: %w", err)
	}
	return func() bool { return unix.SchedSetaffinity(0, &before) == nil }, nil
}

// currentCPU is the CPU the calling thread runs on (getcpu(2)).
func currentCPU() (int, error) {
	var cpu, node uint32
	if _, _, errno := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0); errno != 0 {
		return 0, fmt.Errorf("getcpu: %w", errno)
	}
	return int(cpu), nil
}
