//go:build !linux

package emulator

import (
	"errors"
	"time"
)

// alarm wakes the writer at an instant of the emulator's clock. Elsewhere
// than Linux it is a Go timer, which may fire up to about a millisecond
// late.
type alarm struct {
	start time.Time
	t     *time.Timer
	done  chan struct{}
}

func newAlarm(start time.Time) (*alarm, error) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &alarm{start: start, t: t, done: make(chan struct{})}, nil
}

func (a *alarm) set(at time.Duration) error {
	a.t.Reset(at - time.Since(a.start))
	return nil
}

func (a *alarm) stop() { a.t.Stop() }

func (a *alarm) wait() error {
	select {
	case <-a.t.C:
		return nil
	case <-a.done:
		return errors.New("alarm closed")
	}
}

func (a *alarm) close() { close(a.done) }
