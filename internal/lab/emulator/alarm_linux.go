package emulator

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// alarm wakes the writer at an instant of the emulator's clock. On Linux it
// is a timerfd read through Go's network poller: the kernel's hrtimer fires
// to the nanosecond and the poller wakes the reader as soon as the fd is
// readable, where a Go timer sleeps in epoll_wait with a timeout in whole
// milliseconds and so fires up to a millisecond late.
type alarm struct {
	fd   int      // for timerfd_settime; owned by f
	f    *os.File // for reads through the poller, and Close
	base int64    // CLOCK_MONOTONIC at the emulator's time 0, in ns
}

func newAlarm(start time.Time) (*alarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	// Go's monotonic clock is CLOCK_MONOTONIC: the emulator's time 0 is
	// CLOCK_MONOTONIC now less the time since start. The Go reading is
	// taken between two kernel readings, and the tightest of a few tries
	// counts, so a preemption between the readings cannot skew the base.
	var base, best int64 = 0, -1
	for range 8 {
		var t1, t2 unix.Timespec
		err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &t1)
		since := int64(time.Since(start))
		if err == nil {
			err = unix.ClockGettime(unix.CLOCK_MONOTONIC, &t2)
		}
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("clock_gettime: %w", err)
		}
		if gap := t2.Nano() - t1.Nano(); best < 0 || gap < best {
			best, base = gap, t1.Nano()+gap/2-since
		}
	}
	return &alarm{fd: fd, f: os.NewFile(uintptr(fd), "timerfd"), base: base}, nil
}

// set arms the alarm for time at (since the emulator started); a time that
// has passed fires at once.
func (a *alarm) set(at time.Duration) error {
	abs := max(a.base+int64(at), 1) // 0 would disarm
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(abs)}
	return unix.TimerfdSettime(a.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

// stop disarms the alarm.
func (a *alarm) stop() {
	unix.TimerfdSettime(a.fd, 0, &unix.ItimerSpec{}, nil)
}

// wait blocks until the alarm fires (or has fired since the last wait), or
// fails once the alarm is closed.
func (a *alarm) wait() error {
	var buf [8]byte
	_, err := a.f.Read(buf[:])
	return err
}

// close ends every wait. set and stop must not be called afterwards.
func (a *alarm) close() { a.f.Close() }
