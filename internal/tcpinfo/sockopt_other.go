//go:build !linux

package tcpinfo

import (
	"syscall"

	"github.com/tcpscope/tcpscope/internal/model"
)

// sockopt_linux.go documents these functions; elsewhere each reports
// ErrNotSupported, except where there is nothing to do.

// Read reports ErrNotSupported.
func Read(c syscall.Conn) (model.Sample, error) { return model.Sample{}, ErrNotSupported }

// SetBuffers reports ErrNotSupported.
func SetBuffers(c syscall.Conn, snd, rcv model.Bytes) error { return ErrNotSupported }

// Buffers reports ErrNotSupported.
func Buffers(c syscall.Conn) (snd, rcv model.Bytes, err error) { return 0, 0, ErrNotSupported }

// SetCongestion reports ErrNotSupported.
func SetCongestion(c syscall.Conn, name string) error { return ErrNotSupported }

// Congestion reports ErrNotSupported.
func Congestion(c syscall.Conn) (string, error) { return "", ErrNotSupported }

// SetMSS reports ErrNotSupported.
func SetMSS(c syscall.Conn, mss int) error { return ErrNotSupported }

// MSS reports ErrNotSupported.
func MSS(c syscall.Conn) (int, error) { return 0, ErrNotSupported }

// TOS reports ErrNotSupported.
func TOS(c syscall.Conn) (int, error) { return 0, ErrNotSupported }

// PathMTU reports ErrNotSupported.
func PathMTU(c syscall.Conn) (int, error) { return 0, ErrNotSupported }

// SetMaxPacingRate reports ErrNotSupported.
func SetMaxPacingRate(c syscall.Conn, r model.Bitrate) error { return ErrNotSupported }

// DialControl returns a function that accepts zero options, so callers can
// install it unconditionally, and reports ErrNotSupported otherwise.
func DialControl(o SocketOptions) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		if o.isZero() {
			return nil
		}
		return ErrNotSupported
	}
}

// Apply reports ErrNotSupported unless o is zero.
func Apply(c syscall.Conn, o SocketOptions) error {
	if o.isZero() {
		return nil
	}
	return ErrNotSupported
}

// AvailableCongestion reports nothing.
func AvailableCongestion() []string { return nil }

// Settings reports nothing: the settings are Linux's.
func Settings() *model.TCPSettings { return nil }

// KernelRelease reports nothing.
func KernelRelease() string { return "" }
