package engine

import (
	"strings"
	"testing"
	"time"
)

// The gate lets through what drains in the time left less the queue, in
// part when a whole write does not fit; a write of whole blocks waits
// instead; a short queue never holds a write back.
func TestTailGateAdmits(t *testing.T) {
	stopped := make(chan struct{})
	close(stopped) // a gate that holds returns at once
	gate := func(queued int64) *tailGate {
		// Looked just now: admit decides on these figures, and reads
		// no socket.
		return &tailGate{end: time.Now().Add(time.Second), looked: time.Now(), queued: queued, rate: 1e6, rateOK: true}
	}
	cases := []struct {
		name    string
		queued  int64
		n       int
		whole   bool
		minWant int // allow at least (the second left shrinks while it runs)
		maxWant int
		ok      bool
	}{
		{"the whole write fits", 100_000, 100_000, false, 100_000, 100_000, true},
		{"part of it fits", 800_000, 1 << 20, false, 190_000, 200_000, true},
		{"whole blocks only", 800_000, 1 << 20, true, 0, 0, false},
		{"no room: held back", 995_000, 100_000, false, 0, 0, false},
		{"a short queue too, at the end", minGated, 1 << 30, false, 900_000, 1_000_000, true},
		{"nothing acknowledged, a short queue: no hold", minGated, 1 << 30, false, 1 << 30, 1 << 30, true},
		{"nothing acknowledged, a queue: held back", minGated + 1, 1500, false, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := gate(c.queued)
			if strings.HasPrefix(c.name, "nothing acknowledged") {
				g.rate = 0
			}
			allow, margin, ok := g.admit(c.n, c.whole, stopped)
			if ok != c.ok || allow < c.minWant || allow > c.maxWant {
				t.Fatalf("admit(%d) = %d, %v, %v: want %d..%d, %v", c.n, allow, margin, ok, c.minWant, c.maxWant, c.ok)
			}
			if ok && (margin < 0 || margin > time.Second) {
				t.Errorf("margin %v outside the second left", margin)
			}
			from, queued, held := g.held()
			if held != !ok || (held && (queued != c.queued || from.IsZero())) {
				t.Errorf("held() = %v, %d, %v after admit %v", from, queued, held, ok)
			}
			g.wrote(allow)
			if _, _, held := g.held(); held {
				t.Error("still holding after a write")
			}
		})
	}
}
