package model

import "testing"

// The kernel's factor, as perf's TestWindow reads it back from real
// sockets (64 KiB asked, 128 KiB granted); the two directions invert.
func TestSockBuf(t *testing.T) {
	if got := SockBufFor(64 * KiB); got != 128*KiB {
		t.Fatalf("SockBufFor(64 KiB) = %v, want 128 KiB", got.Binary())
	}
	for _, b := range []Bytes{0, 1, 4096, 212992, 6 * MiB} {
		if got := SockBufData(SockBufFor(b)); got != b {
			t.Errorf("SockBufData(SockBufFor(%d)) = %d", b, got)
		}
	}
}
