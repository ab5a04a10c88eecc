//go:build !linux

package pace

import (
	"context"
	"io"
	"time"
)

// Ticker ticks at a fixed period; without Linux's timerfd, a time.Ticker.
type Ticker struct {
	t   *time.Ticker
	ctx context.Context
}

// NewTicker starts a ticker whose first tick comes one period from now.
// Its Wait returns early, with ctx's error, once ctx is done.
func NewTicker(ctx context.Context, period time.Duration) (*Ticker, error) {
	return &Ticker{t: time.NewTicker(period), ctx: ctx}, nil
}

// Wait blocks until the next tick.
func (t *Ticker) Wait() error {
	select {
	case <-t.ctx.Done():
		return t.ctx.Err()
	case <-t.t.C:
		return nil
	}
}

// Stop stops the ticker.
func (t *Ticker) Stop() { t.t.Stop() }

// Output returns w.
func Output(w io.Writer) io.Writer { return w }
