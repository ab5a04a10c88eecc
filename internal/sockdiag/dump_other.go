//go:build !linux

package sockdiag

import (
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Conn is a sock_diag socket; without Linux there is none.
type Conn struct{}

// Open reports ErrUnsupported.
func Open(netns int) (*Conn, error) { return nil, ErrUnsupported }

// Close does nothing.
func (c *Conn) Close() error { return nil }

// Dump reports ErrUnsupported.
func (c *Conn) Dump(f Filter, at time.Duration, procs *Procs) ([]model.Socket, error) {
	return nil, ErrUnsupported
}

// List reports ErrUnsupported.
func (c *Conn) List(f Filter, at time.Duration, procs *Procs) ([]model.SocketBrief, error) {
	return nil, ErrUnsupported
}

// ListInto reports ErrUnsupported.
func ListInto[T any](c *Conn, f Filter, at time.Duration, procs *Procs, brief func(*T) *model.SocketBrief) ([]T, error) {
	return nil, ErrUnsupported
}

// Get reports ErrUnsupported.
func (c *Conn) Get(s model.Socket, at time.Duration) (model.Socket, bool, error) {
	return model.Socket{}, false, ErrUnsupported
}
