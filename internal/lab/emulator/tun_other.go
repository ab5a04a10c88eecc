//go:build !linux

package emulator

// CreateTUN reports ErrNotSupported: TUN devices are created on Linux only.
func CreateTUN(name string, mtu int) (Device, error) { return nil, ErrNotSupported }

// CreateRawTUN reports ErrNotSupported: TUN devices are created on Linux only.
func CreateRawTUN(name string, mtu int) (Device, error) { return nil, ErrNotSupported }
