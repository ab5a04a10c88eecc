package emulator

import (
	"context"
	"encoding/binary"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// fakeDev is an in-memory Device: the test feeds packets to be read into
// in and finds what the emulator wrote in out, stamped with the time.
type fakeDev struct {
	batch  int
	in     chan []byte
	out    chan written
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	maxBatch int // largest Write seen
	badCap   int // buffers written whose capacity was not exactly one packet's
}

type written struct {
	at  time.Time
	pkt []byte
}

func newFakeDev(batch int) *fakeDev {
	return &fakeDev{batch: batch, in: make(chan []byte, 1<<14), out: make(chan written, 1<<14), closed: make(chan struct{})}
}

func (f *fakeDev) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	select {
	case <-f.closed:
		return 0, os.ErrClosed
	case p := <-f.in:
		sizes[0] = copy(bufs[0][offset:], p)
	}
	n := 1
	for n < len(bufs) {
		select {
		case p := <-f.in:
			sizes[n] = copy(bufs[n][offset:], p)
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

func (f *fakeDev) Write(bufs [][]byte, offset int) (int, error) {
	select {
	case <-f.closed:
		return 0, os.ErrClosed
	default:
	}
	now := time.Now()
	f.mu.Lock()
	f.maxBatch = max(f.maxBatch, len(bufs))
	for _, b := range bufs {
		// wireguard's GRO coalesces into a buffer as far as its
		// capacity goes: it must allow a 64 KiB packet and no more.
		if cap(b)-offset != maxPacket {
			f.badCap++
		}
	}
	f.mu.Unlock()
	for _, b := range bufs {
		f.out <- written{now, slices.Clone(b[offset:])}
	}
	return len(bufs), nil
}

func (f *fakeDev) BatchSize() int { return f.batch }

func (f *fakeDev) Close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

func (f *fakeDev) isClosed() bool {
	select {
	case <-f.closed:
		return true
	default:
		return false
	}
}

// next waits for the next packet written to f.
func (f *fakeDev) next(t *testing.T) written {
	t.Helper()
	select {
	case w := <-f.out:
		return w
	case <-time.After(5 * time.Second):
		t.Fatal("no packet within 5 s")
	}
	return written{}
}

// numbered is an IPv4/UDP-looking packet of size bytes whose payload
// starts with seq.
func numbered(seq uint32, size int) []byte {
	p := ipv4(size, true, 17)
	binary.BigEndian.PutUint32(p[28:], seq)
	return p
}

func seqOf(p []byte) uint32 { return binary.BigEndian.Uint32(p[28:]) }

func startFake(t *testing.T, cfg Config, batch int) (*Emulator, *fakeDev, *fakeDev) {
	t.Helper()
	a, b := newFakeDev(batch), newFakeDev(batch)
	e, err := Start(t.Context(), cfg, a, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e, a, b
}

func TestForwardBothWays(t *testing.T) {
	e, a, b := startFake(t, Config{}, 8)
	a.in <- numbered(1, 100)
	if w := b.next(t); seqOf(w.pkt) != 1 || len(w.pkt) != 100 {
		t.Errorf("b got %d bytes, seq %d", len(w.pkt), seqOf(w.pkt))
	}
	b.in <- numbered(2, 200)
	if w := a.next(t); seqOf(w.pkt) != 2 || len(w.pkt) != 200 {
		t.Errorf("a got %d bytes, seq %d", len(w.pkt), seqOf(w.pkt))
	}
	// A write is counted when the device's Write returns, which is
	// after the fake has passed the packet on.
	waitFor(t, func() bool { return e.Counters(AtoB).Forwarded == 1 && e.Counters(BtoA).Forwarded == 1 })
	ab, ba := e.Counters(AtoB), e.Counters(BtoA)
	want := Counters{Received: 1, ReceivedBytes: 100, Forwarded: 1, ForwardedBytes: 100}
	if ab != want {
		t.Errorf("A→B counters %+v, want %+v", ab, want)
	}
	if ba.Forwarded != 1 || ba.ForwardedBytes != 200 || ba.Queued != 0 {
		t.Errorf("B→A counters %+v", ba)
	}
	if (e.Counters(Dir(7)) != Counters{}) {
		t.Error("an invalid direction has counters")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDelayTiming checks that packets leave on time: never early, and late
// by no more than the scheduler's wake-up latency.
func TestDelayTiming(t *testing.T) {
	const delay = 5 * time.Millisecond
	_, a, b := startFake(t, Config{AtoB: Impairment{Delay: delay}}, 8)
	var late []time.Duration
	for i := range 30 {
		sent := time.Now()
		a.in <- numbered(uint32(i), 100)
		w := b.next(t)
		// The emulator stamps its arrival after sent, so the delay seen
		// here can only be longer than the emulator's.
		if d := w.at.Sub(sent); d < delay {
			t.Fatalf("packet %d left after %v, before its delay of %v", i, d, delay)
		} else {
			late = append(late, d-delay)
		}
		time.Sleep(time.Duration(i%3) * time.Millisecond)
	}
	slices.Sort(late)
	med := late[len(late)/2]
	t.Logf("lateness: min %v, median %v, max %v", late[0], med, late[len(late)-1])
	// Generous for a loaded machine; the lab's RTT test is the strict one.
	if med > time.Millisecond {
		t.Errorf("median lateness %v", med)
	}
}

func TestJitterOrderThroughEmulator(t *testing.T) {
	e, a, b := startFake(t, Config{AtoB: Impairment{Delay: 2 * time.Millisecond, Jitter: time.Millisecond}, Seed: 5}, 16)
	const n = 3000
	go func() {
		for i := range n {
			a.in <- numbered(uint32(i), 60)
			if i%50 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	for i := range n {
		if w := b.next(t); seqOf(w.pkt) != uint32(i) {
			t.Fatalf("packet %d arrived in place %d", seqOf(w.pkt), i)
		}
	}
	waitFor(t, func() bool { return e.Counters(AtoB).Forwarded == n })
	if c := e.Counters(AtoB); c.Reordered != 0 {
		t.Errorf("counters %+v", c)
	}
	if b.maxBatch < 2 {
		t.Errorf("largest write had %d packets: due packets are not batched", b.maxBatch)
	}
	if b.badCap != 0 {
		t.Errorf("%d buffers written with a capacity other than Headroom + 64 KiB", b.badCap)
	}
}

func TestRateThroughEmulator(t *testing.T) {
	// 1250 bytes at 10 Mbit/s take 1 ms each: 50 offered at once leave
	// over 50 ms, evenly.
	_, a, b := startFake(t, Config{AtoB: Impairment{Rate: 10 * model.MbitPerSecond}}, 8)
	start := time.Now()
	for i := range 50 {
		a.in <- numbered(uint32(i), 1250)
	}
	var last time.Time
	for i := range 50 {
		w := b.next(t)
		if seqOf(w.pkt) != uint32(i) {
			t.Fatalf("packet %d in place %d", seqOf(w.pkt), i)
		}
		last = w.at
	}
	// Never faster than the rate; slower only by scheduling (generous,
	// for a loaded machine: the lab's rate test is the strict one).
	if took := last.Sub(start); took < 50*time.Millisecond || took > 100*time.Millisecond {
		t.Errorf("50 × 1 ms of serialization took %v", took)
	}
}

func TestICMPGoesBack(t *testing.T) {
	e, a, b := startFake(t, Config{AtoB: Impairment{MTU: 1000}}, 8)
	big := numbered(1, 1200)
	a.in <- big
	w := a.next(t)
	if w.pkt[9] != protoICMP || w.pkt[20] != 3 || w.pkt[21] != 4 || binary.BigEndian.Uint16(w.pkt[26:]) != 1000 {
		t.Errorf("a got % x, want ICMP frag needed with MTU 1000", w.pkt[:28])
	}
	a.in <- numbered(2, 1000)
	if w := b.next(t); seqOf(w.pkt) != 2 {
		t.Errorf("b got seq %d, want the packet that fits", seqOf(w.pkt))
	}
	waitFor(t, func() bool { return e.Counters(AtoB).Forwarded == 1 })
	ab, ba := e.Counters(AtoB), e.Counters(BtoA)
	if ab.DroppedMTU != 1 || ab.ICMPSent != 1 || ab.Received != 2 || ab.Forwarded != 1 {
		t.Errorf("A→B counters %+v", ab)
	}
	if (ba != Counters{}) {
		t.Errorf("the ICMP answer shows in B→A's counters: %+v", ba)
	}

	// A black hole answers nothing.
	e2, a2, b2 := startFake(t, Config{AtoB: Impairment{MTU: 1000, BlackHole: true}}, 8)
	a2.in <- big
	a2.in <- numbered(3, 1000)
	if w := b2.next(t); seqOf(w.pkt) != 3 {
		t.Errorf("b got seq %d", seqOf(w.pkt))
	}
	if c := e2.Counters(AtoB); c.DroppedMTU != 1 || c.ICMPSent != 0 || len(a2.out) != 0 {
		t.Errorf("black hole: counters %+v, %d packets back to a", c, len(a2.out))
	}
}

func TestDuplicateAndLossThroughEmulator(t *testing.T) {
	e, a, b := startFake(t, Config{AtoB: Impairment{Duplicate: 1}, BtoA: Impairment{Loss: 1}}, 8)
	a.in <- numbered(1, 100)
	if x, y := b.next(t), b.next(t); seqOf(x.pkt) != 1 || seqOf(y.pkt) != 1 {
		t.Error("the duplicate is not a copy")
	}
	b.in <- numbered(2, 100)
	waitFor(t, func() bool { return e.Counters(BtoA).DroppedLoss == 1 && e.Counters(AtoB).Forwarded == 2 })
	if c := e.Counters(AtoB); c.Duplicated != 1 || c.Forwarded != 2 || c.Received != 1 {
		t.Errorf("A→B counters %+v", c)
	}
	if len(a.out) != 0 {
		t.Error("a lost packet arrived")
	}
}

func TestQueuedCounters(t *testing.T) {
	e, a, b := startFake(t, Config{AtoB: Impairment{Delay: 200 * time.Millisecond}}, 8)
	for i := range 5 {
		a.in <- numbered(uint32(i), 100)
	}
	waitFor(t, func() bool { return e.Counters(AtoB).Received == 5 })
	if c := e.Counters(AtoB); c.Queued != 5 || c.QueuedBytes != 500 || c.Forwarded != 0 {
		t.Errorf("while held: %+v", c)
	}
	for range 5 {
		b.next(t)
	}
	waitFor(t, func() bool { return e.Counters(AtoB).Forwarded == 5 })
	if c := e.Counters(AtoB); c.Queued != 0 || c.QueuedBytes != 0 {
		t.Errorf("after: %+v", c)
	}
}

func TestClose(t *testing.T) {
	a, b := newFakeDev(4), newFakeDev(4)
	ctx, cancel := context.WithCancel(context.Background())
	e, err := Start(ctx, Config{AtoB: Impairment{Delay: time.Hour}}, a, b)
	if err != nil {
		t.Fatal(err)
	}
	a.in <- numbered(1, 100) // held for an hour, discarded by Close
	waitFor(t, func() bool { return e.Counters(AtoB).Queued == 1 })
	cancel()
	waitFor(t, func() bool { return a.isClosed() && b.isClosed() })
	if err := e.Close(); err != nil {
		t.Errorf("Close after the context ended: %v", err)
	}
	if c := e.Counters(AtoB); c.Queued != 0 || c.QueuedBytes != 0 || c.Forwarded != 0 {
		t.Errorf("after Close: %+v; want the held packet discarded", c)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// Start refuses a bad configuration and leaves the devices open.
	a, b = newFakeDev(1), newFakeDev(1)
	if _, err := Start(context.Background(), Config{AtoB: Impairment{Loss: 2}}, a, b); err == nil {
		t.Error("Start accepted loss 2")
	}
	if a.isClosed() || b.isClosed() {
		t.Error("a failed Start closed the devices")
	}
	if _, err := Start(context.Background(), Config{}, a, nil); err == nil {
		t.Error("Start accepted a nil device")
	}
}

func TestReorderThroughEmulator(t *testing.T) {
	e, a, b := startFake(t, Config{AtoB: Impairment{Delay: 3 * time.Millisecond, Reorder: 0.2}, Seed: 3}, 16)
	const n = 2000
	go func() {
		for i := range n {
			a.in <- numbered(uint32(i), 60)
			if i%20 == 0 {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	seqs := make([]int, n)
	for i := range n {
		seqs[i] = int(seqOf(b.next(t).pkt))
	}
	// A packet overtook if one sent before it arrives after it.
	overtook, minAfter := 0, n
	for i := n - 1; i >= 0; i-- {
		if minAfter < seqs[i] {
			overtook++
		}
		minAfter = min(minAfter, seqs[i])
	}
	sorted := slices.Clone(seqs)
	slices.Sort(sorted)
	for i, s := range sorted {
		if s != i {
			t.Fatalf("packet %d lost or duplicated", i)
		}
	}
	c := e.Counters(AtoB)
	t.Logf("%d of %d packets overtook another; counted %d", overtook, n, c.Reordered)
	// Equal but for a reader stalled for the whole 3 ms of delay (a
	// packet ahead already sent cannot be overtaken, though it counts).
	if overtook == 0 || uint64(overtook) > c.Reordered || uint64(overtook) < c.Reordered*9/10 {
		t.Errorf("%d packets overtook another, %d counted as reordered", overtook, c.Reordered)
	}
}
