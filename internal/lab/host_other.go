//go:build !linux

package lab

import (
	"context"
	"net"
	"os/exec"
)

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
