//go:build !linux

package engine

import "errors"

// PinProcess is Linux's (sched_setaffinity): elsewhere it reports that.
func PinProcess(cpu int) (restore func(), err error) {
	return nil, errors.New("pinning to a CPU (-A) needs Linux")
}

// pinThread is Linux's: elsewhere a test's streams run where the
// runtime puts them.
func pinThread(int) (func() bool, error) { return nil, errors.New("pinning a thread needs Linux") }

// currentCPU is Linux's (getcpu(2)).
func currentCPU() (int, error) { return 0, errors.New("getcpu needs Linux") }
