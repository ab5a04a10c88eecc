package emulator

import (
	"sync"
	"time"
)

// packet is a pooled copy of one IP packet held until it leaves.
type packet struct{ b []byte }

// Buffers come in size classes of 2 KiB to 64 KiB, powers of two, so a
// queue of full-size packets costs about 2 KiB each, not the 64 KiB a read
// buffer must allow for.
const (
	minClassShift = 11 // 2 KiB
	numClasses    = 6  // up to 64 KiB
	maxPacket     = 65535
)

var pools [numClasses]sync.Pool

func class(n int) int {
	c := 0
	for n > 1<<(minClassShift+c) {
		c++
	}
	return c
}

// newPacket returns a pooled copy of b (at most maxPacket bytes).
func newPacket(b []byte) *packet {
	c := class(len(b))
	p, _ := pools[c].Get().(*packet)
	if p == nil {
		p = &packet{b: make([]byte, 0, 1<<(minClassShift+c))}
	}
	p.b = append(p.b[:0], b...)
	return p
}

func (p *packet) free() {
	if cap(p.b) == vnetHdrLen+maxPacket {
		superPool.Put(p)
		return
	}
	if c := class(cap(p.b)); c < numClasses && cap(p.b) == 1<<(minClassShift+c) {
		pools[c].Put(p)
	}
}

// item is a packet waiting in a writer's queue.
type item struct {
	leave time.Duration
	// ahead: a reordered packet, which leaves before the packets with the
	// same leave time that are not ahead.
	ahead bool
	// icmp: an answer from the emulator, counted by the direction that
	// caused it, not by the writer.
	icmp bool
	// whole: pkt.b is a virtio-net header and a packet read whole
	// (superDevice), which counts as packets packets of bytes bytes.
	whole          bool
	packets, bytes int
	seq            uint64 // order of arrival at the writer, the last tie-breaker
	pkt            *packet
}

// count is what the item counts as in the direction's counters.
func (it *item) count() (packets, bytes uint64) {
	if it.whole {
		return uint64(it.packets), uint64(it.bytes)
	}
	return 1, uint64(len(it.pkt.b))
}

func (a *item) before(b *item) bool {
	if a.leave != b.leave {
		return a.leave < b.leave
	}
	if a.ahead != b.ahead {
		return a.ahead
	}
	return a.seq < b.seq
}

// timeQueue is a binary min-heap of items in leave order.
type timeQueue []item

func (q timeQueue) len() int { return len(q) }

func (q *timeQueue) push(it item) {
	*q = append(*q, it)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h[i].before(&h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

// min is the first item to leave; the queue must not be empty.
func (q timeQueue) min() *item { return &q[0] }

func (q *timeQueue) pop() item {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = item{}
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].before(&h[m]) {
			m = l
		}
		if r < len(h) && h[r].before(&h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}
