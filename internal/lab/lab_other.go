//go:build !linux

package lab

import (
	"context"
	"net"
	"os/exec"
)

// Check reports ErrNotSupported: the lab needs Linux network namespaces.
func Check() error { return ErrNotSupported }

// NewPair reports ErrNotSupported.
func NewPair(ctx context.Context, cfg PairConfig) (*Pair, error) { return nil, ErrNotSupported }

// Clean reports ErrNotSupported.
func Clean(ctx context.Context) (Cleaned, error) { return Cleaned{}, ErrNotSupported }

// SetImpairment reports ErrNotSupported.
func (p *Pair) SetImpairment(ctx context.Context, d Dir, imp Impairment) error {
	return ErrNotSupported
}

// Dropped reports ErrNotSupported.
func (p *Pair) Dropped(ctx context.Context, d Dir) (uint64, error) { return 0, ErrNotSupported }

// Close has nothing to remove.
func (p *Pair) Close() error { return nil }

// Command returns a command that fails to start with ErrNotSupported.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Err = ErrNotSupported
	return cmd
}

// Do reports ErrNotSupported without calling fn.
func (h *Host) Do(fn func() error) error { return ErrNotSupported }

// Listen reports ErrNotSupported.
func (h *Host) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	return nil, ErrNotSupported
}

// Dial reports ErrNotSupported.
func (h *Host) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	return nil, ErrNotSupported
}

// SetSysctl reports ErrNotSupported.
func (h *Host) SetSysctl(key, value string) error { return ErrNotSupported }

// Sysctl reports ErrNotSupported.
func (h *Host) Sysctl(key string) (string, error) { return "", ErrNotSupported }

// HasNetem reports ErrNotSupported: the lab needs Linux.
func HasNetem(ctx context.Context) error { return ErrNotSupported }
