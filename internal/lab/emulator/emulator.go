package emulator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.zx2c4.com/wireguard/tun"
)

// Device is what the emulator reads packets from and writes them to: the
// part of golang.zx2c4.com/wireguard/tun's Device it uses, so tests can
// pass a fake. Read and Write move batches of whole IP packets, each
// starting offset bytes into its buffer (the emulator passes Headroom);
// Read blocks until at least one packet is there, and returns an error
// wrapping os.ErrClosed once the device is closed.
type Device interface {
	Read(bufs [][]byte, sizes []int, offset int) (n int, err error)
	Write(bufs [][]byte, offset int) (int, error)
	BatchSize() int
	Close() error
}

// Headroom is the offset at which packets start in the emulator's buffers:
// room for the 10-byte virtio-net header of a TUN device with offloads.
const Headroom = 16

// wakeLead is how early the writer's alarm fires before a packet that is
// due after a long wait (more than twice wakeLead); the writer then spins
// until the packet is due. A thread woken from an idle CPU runs 50 to
// 150 µs after its timer fires on the virtual machines we test on (in a
// trial, timerfd wake-ups through Go's poller came a median 97 µs and at
// the 90th percentile 148 µs late), which would add up to a few hundred
// microseconds to every round trip. A busy writer is woken without that
// lag, and short waits are not spun: the spin costs at most wakeLead of CPU
// per long wait.
const wakeLead = 200 * time.Microsecond

// wakeAt is when the writer should wake, at now, for a packet leaving at
// leave: early by wakeLead when the wait is long.
func wakeAt(now, leave time.Duration) time.Duration {
	if leave-now > 2*wakeLead {
		return leave - wakeLead
	}
	return leave
}

// Emulator forwards packets between two devices, impairing each direction.
// Its methods are safe for concurrent use.
type Emulator struct {
	cfg   Config
	start time.Time
	devs  [2]Device
	dirs  [2]*direction

	wg        sync.WaitGroup
	closing   atomic.Bool
	closeOnce sync.Once
	closeErr  error

	mu        sync.Mutex
	stopWatch func() bool // unregisters the context watch
}

// direction is one way through the emulator: a reader on in, the path
// model, and the writer onto the other device.
type direction struct {
	e    *Emulator
	dir  Dir
	cfg  Impairment
	in   Device
	imp  *impairer
	c    counters
	out  *writer // writes to the other device
	back *writer // writes to in's device: where ICMP answers go
	// whole: the direction moves packets as the kernel holds them (see
	// superDevice), because its impairment gives every packet the same
	// fate (wholeFate) and both devices can.
	whole bool
}

// Start runs the emulator between a and b until Close, or until ctx ends.
// On success the emulator owns both devices and closes them; on failure
// they are the caller's still.
func Start(ctx context.Context, cfg Config, a, b Device) (*Emulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if a == nil || b == nil {
		return nil, errors.New("emulator: Start needs two devices")
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	e := &Emulator{cfg: cfg, start: time.Now(), devs: [2]Device{a, b}}
	var writers [2]*writer // writers[i] writes to devs[i]
	for i := range writers {
		al, err := newAlarm(e.start)
		if err != nil {
			for _, w := range writers[:i] {
				w.close()
			}
			return nil, fmt.Errorf("emulator: %w", err)
		}
		writers[i] = &writer{e: e, out: e.devs[i], alarm: al}
	}
	for _, d := range []Dir{AtoB, BtoA} {
		dc := cfg.AtoB
		if d == BtoA {
			dc = cfg.BtoA
		}
		in, to := int(d), 1-int(d)
		dd := &direction{e: e, dir: d, cfg: dc, in: e.devs[in], out: writers[to], back: writers[in]}
		_, superIn := e.devs[in].(superDevice)
		_, superOut := e.devs[to].(superDevice)
		dd.whole = wholeFate(dc) && superIn && superOut
		dd.imp = newImpairer(dc, rand.New(rand.NewPCG(seed, uint64(d)+1)), &dd.c)
		writers[to].c = &dd.c
		e.dirs[d] = dd
	}
	e.wg.Add(4)
	for _, d := range e.dirs {
		go d.read()
		go d.out.run()
	}
	if ctx != nil {
		stop := context.AfterFunc(ctx, func() { e.Close() })
		e.mu.Lock()
		e.stopWatch = stop
		e.mu.Unlock()
	}
	return e, nil
}

// now is the emulator's clock: monotonic time since Start.
func (e *Emulator) now() time.Duration { return time.Since(e.start) }

// Config returns the configuration the emulator runs with.
func (e *Emulator) Config() Config { return e.cfg }

// Counters returns direction d's counters; each field is read atomically,
// the set as a whole while packets keep moving.
func (e *Emulator) Counters(d Dir) Counters {
	if !d.valid() {
		return Counters{}
	}
	return e.dirs[d].c.snapshot()
}

// Close stops the emulator, closes both devices and waits for its
// goroutines. Packets still queued are discarded. Calls after the first
// return the first call's result.
func (e *Emulator) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		stop := e.stopWatch
		e.mu.Unlock()
		if stop != nil {
			stop()
		}
		e.closing.Store(true)
		for _, d := range e.dirs {
			d.out.close()
		}
		var errs []error
		for i, dev := range e.devs {
			if err := dev.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
				errs = append(errs, fmt.Errorf("emulator: close device %c: %w", 'a'+i, err))
			}
		}
		e.wg.Wait()
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}

// read is the reading goroutine of a direction: it reads batches, decides
// each packet's fate and hands the survivors to the writer.
func (d *direction) read() {
	defer d.e.wg.Done()
	if d.whole {
		d.readWhole()
		return
	}
	// Every buffer takes a packet of up to 64 KiB: an unsegmented one
	// may be as large as the device's MTU, which the emulator does not
	// know. Pages the kernel never writes to are never touched, so most
	// of the 8 MiB this reserves for a batch of 128 stays virtual.
	batch := max(d.in.BatchSize(), 1)
	bufs, sizes := make([][]byte, batch), make([]int, batch)
	slab := make([]byte, batch*(Headroom+maxPacket))
	for i := range bufs {
		lo, hi := i*(Headroom+maxPacket), (i+1)*(Headroom+maxPacket)
		bufs[i] = slab[lo:hi:hi]
	}
	var items, answers []item
	failures := 0
	for {
		n, err := d.in.Read(bufs, sizes, Headroom)
		if err != nil {
			if d.e.closing.Load() || errors.Is(err, os.ErrClosed) {
				return
			}
			// A super-packet with more segments than buffers loses its
			// tail (wireguard's tun returns what fitted); anything else
			// is counted, and a device that keeps failing is not spun on.
			d.c.errors.Add(1)
			if !errors.Is(err, tun.ErrTooManySegments) {
				if failures++; failures > 10 {
					time.Sleep(time.Millisecond)
				}
			}
		} else {
			failures = 0
		}
		if n == 0 {
			continue
		}
		now := d.e.now()
		var queued, queuedBytes, received uint64
		for i := range n {
			pkt := bufs[i][Headroom : Headroom+sizes[i]]
			received += uint64(len(pkt))
			if drop, reply := oversize(pkt, d.cfg.MTU, d.cfg.BlackHole); drop {
				d.c.droppedMTU.Add(1)
				if reply != nil {
					d.c.icmpSent.Add(1)
					answers = append(answers, item{leave: now, icmp: true, pkt: newPacket(reply)})
				}
				continue
			}
			f := d.imp.arrive(now, len(pkt))
			for c := range f.n {
				items = append(items, item{leave: f.leave[c], ahead: f.ahead[c], pkt: newPacket(pkt)})
				queued++
				queuedBytes += uint64(len(pkt))
			}
		}
		// Queued before the writer can write (and uncount) them, and
		// before Received, so that a reader of the counters never sees
		// a packet received but neither queued, dropped nor forwarded.
		d.c.queued.Add(queued)
		d.c.queuedBytes.Add(queuedBytes)
		d.c.received.Add(uint64(n))
		d.c.receivedBytes.Add(received)
		if len(items) > 0 {
			d.out.push(now, items)
			clear(items)
			items = items[:0]
		}
		if len(answers) > 0 {
			d.back.push(now, answers)
			clear(answers)
			answers = answers[:0]
		}
	}
}

// readWhole is read for a whole direction: one packet as the kernel holds
// it per read (a super-packet of up to 64 KiB, or a single packet), its
// fate decided once (wholeFate: a delay, the same for every segment), and,
// when it is due at once and nothing waits ahead of it, written by this
// goroutine straight away: no copy, no hand-off to the writer, no alarm.
// A large packet stays in the buffer it was read into until it leaves; a
// small one (an ACK) is copied out so that a long delay line of them does
// not hold 64 KiB each.
func (d *direction) readWhole() {
	in := d.in.(superDevice)
	failures := 0
	var one [1]item
	for {
		p := superPool.Get().(*packet)
		n, err := in.readSuper(p.b[:cap(p.b)])
		if err != nil {
			p.free()
			if d.e.closing.Load() || errors.Is(err, os.ErrClosed) {
				return
			}
			d.c.errors.Add(1)
			if failures++; failures > 10 {
				time.Sleep(time.Millisecond)
			}
			continue
		}
		failures = 0
		packets, bytes, ok := superCount(p.b[:n])
		if !ok {
			p.free()
			d.c.errors.Add(1)
			continue
		}
		now := d.e.now()
		f := d.imp.arrive(now, bytes)
		if f.n != 1 {
			// wholeFate lets nothing drop or duplicate a packet; were
			// that to change, this direction would have to split.
			p.free()
			d.c.received.Add(uint64(packets))
			d.c.receivedBytes.Add(uint64(bytes))
			continue
		}
		pkt := p
		if n <= superSmallCopy {
			pkt = newPacket(p.b[:n])
			p.free()
		} else {
			p.b = p.b[:n]
		}
		// Counted in the order read counts them.
		d.c.queued.Add(uint64(packets))
		d.c.queuedBytes.Add(uint64(bytes))
		d.c.received.Add(uint64(packets))
		d.c.receivedBytes.Add(uint64(bytes))
		one[0] = item{leave: f.leave[0], ahead: f.ahead[0], whole: true, packets: packets, bytes: bytes, pkt: pkt}
		d.out.send(now, one[:])
		one[0] = item{}
	}
}

// writer holds one device's outgoing packets in leave order and writes
// them when due.
type writer struct {
	e     *Emulator
	out   Device
	c     *counters // of the direction whose packets these are
	alarm *alarm

	// wmu orders writes to out: whoever writes takes it before letting
	// go of mu, so a packet written by a reader (send) never overtakes one
	// the writer has taken from the queue but not yet written.
	wmu sync.Mutex

	mu       sync.Mutex
	q        timeQueue
	seq      uint64
	armed    bool          // the alarm is set and no wait has seen it go off
	armedAt  time.Duration // when the alarm was last set to go off,
	armedFor time.Duration // for a packet leaving then (later when early)
	closed   bool
}

// push queues items and wakes the writer if one leaves before the time it
// sleeps to.
func (w *writer) push(now time.Duration, items []item) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		for _, it := range items {
			it.pkt.free()
		}
		return
	}
	for _, it := range items {
		w.seq++
		it.seq = w.seq
		w.q.push(it)
	}
	if next := w.q.min().leave; !w.armed || wakeAt(now, next) < w.armedAt {
		w.arm(now, next)
	}
}

// send writes items (whole ones: see readWhole) at once from the calling
// goroutine when all are due and none wait ahead of them in the queue, and
// queues them otherwise.
func (w *writer) send(now time.Duration, items []item) {
	w.mu.Lock()
	due := !w.closed && w.q.len() == 0
	for i := range items {
		due = due && items[i].whole && items[i].leave <= now
	}
	if !due {
		w.mu.Unlock()
		w.push(now, items)
		return
	}
	w.wmu.Lock()
	w.mu.Unlock()
	w.write(items, nil, nil)
	w.wmu.Unlock()
}

// arm sets the alarm, at now, for a packet leaving at leave (early when
// the wait is long; see wakeAt); w.mu is held.
func (w *writer) arm(now, leave time.Duration) {
	at := wakeAt(now, leave)
	if err := w.alarm.set(at); err != nil {
		// Cannot happen with a valid timer; count it rather than lose
		// track silently. The next push or wake-up tries again.
		w.c.errors.Add(1)
		w.armed = false
		return
	}
	w.armed, w.armedAt, w.armedFor = true, at, leave
}

// close stops the writer: it discards the queue, and its goroutine ends at
// its next wake-up, which closing the alarm brings about at once.
func (w *writer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	for w.q.len() > 0 {
		it := w.q.pop()
		if !it.icmp {
			pkts, bytes := it.count()
			w.c.queued.Add(-pkts)
			w.c.queuedBytes.Add(-bytes)
		}
		it.pkt.free()
	}
	w.alarm.close()
}

// run is the writing goroutine: take what is due, write it in one batch,
// sleep until the next packet is due.
func (w *writer) run() {
	defer w.e.wg.Done()
	n := max(w.out.BatchSize(), 1)
	// Each write buffer can grow to 64 KiB, which GRO needs to coalesce
	// segments into the first of them. Its capacity must end there:
	// wireguard's GRO coalesces for as long as the capacity allows, and a
	// buffer that could grow into its neighbour would make aggregates
	// larger than an IP packet can be (their 16-bit total length wraps,
	// and the receiving kernel trims them to the wrapped length: about
	// one 46-segment aggregate lost, silently, whenever a batch held that
	// many packets of one flow).
	slab := make([]byte, n*(Headroom+maxPacket))
	scratch := make([][]byte, n)
	for i := range scratch {
		lo, hi := i*(Headroom+maxPacket), (i+1)*(Headroom+maxPacket)
		scratch[i] = slab[lo:hi:hi]
	}
	batch := make([][]byte, 0, n)
	taken := make([]item, 0, n)
	for {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return
		}
		now := w.e.now()
		for w.q.len() > 0 && len(taken) < n && w.q.min().leave <= now {
			taken = append(taken, w.q.pop())
		}
		if len(taken) > 0 {
			// Write at once and come straight back: the alarm is seen
			// to when nothing is due, so that no timer syscall (a
			// virtual machine exit, 10 to 20 µs) delays a write.
			w.wmu.Lock()
			w.mu.Unlock()
			w.write(taken, scratch, batch)
			w.wmu.Unlock()
			clear(taken)
			taken = taken[:0]
			continue
		}
		spin := false
		if w.q.len() == 0 {
			// A one-shot alarm that has fired is disarmed; one set for
			// later stays and wakes the writer for nothing, which
			// costs less than a syscall to stop it.
			if w.armed && w.armedAt <= now {
				w.armed = false
			}
		} else {
			next := w.q.min().leave
			// Woken by an early alarm (wakeAt) for this packet or a
			// later one: spin for it. After an exact alarm, for a short
			// wait, sleep again.
			spin = w.armedAt < w.armedFor && w.armedAt <= now && next <= w.armedFor && next-now <= wakeLead
			if !spin && (!w.armed || wakeAt(now, next) != w.armedAt) {
				w.arm(now, next)
			}
		}
		w.mu.Unlock()
		if spin {
			// Let the readers run if they have work; otherwise this
			// returns at once.
			runtime.Gosched()
			continue
		}
		if err := w.alarm.wait(); err != nil {
			return
		}
		// The one-shot alarm has gone off (or an older expiry was
		// read): whatever the clocks say, it is set again before the
		// next wait if a packet needs it, so no wake-up is ever lost.
		w.mu.Lock()
		w.armed = false
		w.mu.Unlock()
	}
}

// write sends taken in one batch, through the scratch buffers, and counts
// them. With whole packets among them it writes one at a time, each
// behind its virtio-net header (an empty one for a plain packet); scratch
// is then used for the plain ones only. wmu is held.
func (w *writer) write(taken []item, scratch, batch [][]byte) {
	for i := range taken {
		if taken[i].whole {
			w.writeEach(taken, scratch)
			return
		}
	}
	var pkts, bytes uint64
	for i, it := range taken {
		b := scratch[i][:Headroom+len(it.pkt.b)]
		copy(b[Headroom:], it.pkt.b)
		batch = append(batch, b)
		if !it.icmp {
			pkts++
			bytes += uint64(len(it.pkt.b))
		}
		it.pkt.free()
	}
	_, err := w.out.Write(batch, Headroom)
	w.c.queued.Add(-pkts)
	w.c.queuedBytes.Add(-bytes)
	if err == nil {
		w.c.forwarded.Add(pkts)
		w.c.forwardedBytes.Add(bytes)
	} else if !w.e.closing.Load() {
		w.c.errors.Add(1)
	}
}

// writeEach is write for a batch with whole packets: the TUN driver takes
// one packet per write system call, so there is nothing to batch.
func (w *writer) writeEach(taken []item, scratch [][]byte) {
	sd := w.out.(superDevice) // only a superDevice's direction is whole
	var pkts, bytes, fwd, fwdBytes uint64
	for i := range taken {
		it := &taken[i]
		b := it.pkt.b
		if !it.whole {
			b = scratch[i][Headroom-vnetHdrLen : Headroom+len(it.pkt.b)]
			clear(b[:vnetHdrLen]) // no offload asked: a plain packet
			copy(b[vnetHdrLen:], it.pkt.b)
		}
		err := sd.writeSuper(b)
		if !it.icmp {
			p, n := it.count()
			pkts += p
			bytes += n
			if err == nil {
				fwd += p
				fwdBytes += n
			}
		}
		if err != nil && !w.e.closing.Load() {
			w.c.errors.Add(1)
		}
		it.pkt.free()
	}
	w.c.queued.Add(-pkts)
	w.c.queuedBytes.Add(-bytes)
	w.c.forwarded.Add(fwd)
	w.c.forwardedBytes.Add(fwdBytes)
}
