package model

import "testing"

// A fix's sysctl text: the kernel's minimum and default kept, the
// maximum raised, in bytes as sysctl writes them.
func TestBufferBoundsSysctl(t *testing.T) {
	if got := LinuxRmem.WithMax(12 * MiB).String(); got != "4096 131072 12582912" {
		t.Errorf("tcp_rmem: %q", got)
	}
	if got := LinuxWmem.WithMax(4 * MiB).String(); got != "4096 16384 4194304" {
		t.Errorf("tcp_wmem: %q", got)
	}
	if LinuxRmem.Max != 0 || LinuxWmem.Max != 0 {
		t.Errorf("WithMax changed the defaults: %v, %v", LinuxRmem, LinuxWmem)
	}
}
