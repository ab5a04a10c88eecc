//go:build !linux

package emulator

// CreateTUN reports ErrNotSupported: TUN devices are created on Linux only.
func CreateTUN(name string, mtu int) (Device, error) { return nil, ErrNotSupported }
