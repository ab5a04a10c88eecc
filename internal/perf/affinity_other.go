//go:build !linux

package perf

import "errors"

// PinProcess is Linux's (sched_setaffinity): elsewhere it reports that.
func PinProcess(cpu int) (restore func(), err error) {
	return nil, errors.New("pinning to a CPU (-A) needs Linux")
}
