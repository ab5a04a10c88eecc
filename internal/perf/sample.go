package perf

import (
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// sample emits one interval per tick until every stream is done, then a
// last, shorter interval ending when the last stream finished.
func (e *End) sample() {
	sm := e.newSampler()
	allDone := make(chan struct{})
	go func() {
		for _, s := range e.streams {
			<-s.done
		}
		close(allDone)
	}()
	ticker := time.NewTicker(e.cfg.Interval)
	defer ticker.Stop()
	var omitC <-chan time.Time
	if e.cfg.Omit > 0 {
		// The mark falls at the start plus -O on the end's clock, not on
		// this sampler's, which a busy server starts tens of
		// milliseconds later: totals time the measured period from
		// there, and an iperf3 client's results count its bytes from its
		// own mark, which comes after ours (its clock starts on
		// TEST_RUNNING, sent after ours started). Marked late, at 30
		// Gbit/s the server counted megabytes fewer than the client's
		// results and waited out its stall timer for them (issue 24).
		t := time.NewTimer(max(e.cfg.Omit-e.since(), 0))
		defer t.Stop()
		omitC = t.C
	}
	planned := span(&e.cfg)
	for index := 0; ; {
		last := false
		select {
		case <-ticker.C:
			if planned > 0 && e.since() >= planned-e.cfg.Interval/10 {
				// The senders stop on this tick: let the last interval run
				// on until the final bytes land rather than print a sliver.
				continue
			}
		case <-allDone:
			last = true
		case <-omitC:
			// The measured period begins; the interval in progress goes
			// on.
			e.markOmitAll()
			continue
		}
		end := e.since()
		if last {
			end = e.lastEnd(sm.start)
		}
		iv := sm.interval(index, end)
		if last && idle(&iv) && end-iv.Start < e.cfg.Interval/10 {
			// The senders stopped on a tick: a sliver of an interval with
			// no data says nothing (the totals keep the final samples).
			return
		}
		e.intervals = append(e.intervals, iv)
		if e.emit != nil {
			e.emit(iv)
		}
		index++
		if last {
			return
		}
	}
}

// markOmitAll snapshots every stream's counters where the measured
// period begins (-O): a TCP stream that has not marked itself on its
// own read or write (markOmit) is marked here.
func (e *End) markOmitAll() {
	for i, s := range e.streams {
		if s.udp != nil || s.omitMarked.CompareAndSwap(false, true) {
			e.omitBytes[i].Store(s.moved.Load())
		}
		if s.udp != nil {
			e.omitUDP[i] = s.udp.datagrams()
		}
		if smp, ok := e.read(s); ok {
			e.omitSample[i] = smp
		}
	}
}

// lastEnd is when the last interval, begun at start, ends: when the
// last stream finished.
func (e *End) lastEnd(start time.Duration) time.Duration {
	var end time.Duration
	for _, s := range e.streams {
		end = max(end, s.finished)
	}
	if end >= start {
		return end
	}
	// Every stream had finished before the last tick, but their final
	// samples may be newer: acknowledgments of the last bytes that came
	// after the tick. The sliver runs to them (an idle one is dropped).
	end = start
	for _, s := range e.streams {
		if smp, ok := e.read(s); ok {
			end = max(end, smp.At)
		}
	}
	return end
}

// sampler turns an end's streams' counters and kernel samples into
// intervals: what each stream moved, and its kernel's view, since the
// last one.
type sampler struct {
	e         *End
	start     time.Duration // the next interval's start
	prev      []model.Sample
	prevBytes []int64
	prevUDP   []model.Datagrams
	// ackBase is each sender's bytes acknowledged at its first read;
	// acked counts them in intervals since.
	ackBase []model.Opt[model.Bytes]
	acked   []model.Bytes
}

func (e *End) newSampler() *sampler {
	n := len(e.streams)
	sm := &sampler{e: e, prev: make([]model.Sample, n), prevBytes: make([]int64, n), prevUDP: make([]model.Datagrams, n),
		ackBase: make([]model.Opt[model.Bytes], n), acked: make([]model.Bytes, n)}
	copy(sm.prev, e.omitSample)
	for i := range sm.prev {
		sm.ackBase[i] = ackedBase(&sm.prev[i])
	}
	return sm
}

// interval is the interval from the sampler's start to end, numbered
// index; the next starts at end.
func (sm *sampler) interval(index int, end time.Duration) model.Interval {
	e := sm.e
	iv := model.Interval{Index: index, Start: sm.start, End: end, Streams: make([]model.StreamInterval, len(e.streams))}
	for i, s := range e.streams {
		iv.Streams[i] = sm.stream(i, s, end)
	}
	if c, ok := readCPUClock(e.quotaDir); ok && e.cpuMarkOK {
		iv.CPU = cpuUse(e.cpuMark, c)
		e.cpuMark = c
	}
	// An interval that began before the omit boundary is (at least
	// partly) slow start: marked; the totals start at the omit mark itself.
	iv.Omitted = sm.start < e.cfg.Omit
	sm.start = end
	return iv
}

// stream is stream i's part of the interval ending at end.
func (sm *sampler) stream(i int, s *Stream, end time.Duration) model.StreamInterval {
	e := sm.e
	cur, ok := e.read(s)
	// A stream's final sample can be stamped just before a tick that read
	// the socket once more, before the stream was marked done: the tick's
	// sample is then the newer one.
	if !ok || cur.At < sm.prev[i].At {
		cur = sm.prev[i]
	}
	b := s.moved.Load()
	e.observe(i, &cur)
	si := intervalOf(s, &sm.prev[i], &cur, model.Bytes(b-sm.prevBytes[i]), end-sm.start)
	switch {
	case !ok:
		// No kernel read covers this interval: what the kernel counted
		// in it is unknown, not zero.
		si.OutOfOrder = model.Opt[uint32]{}
	case s.role == model.Sender && s.udp == nil:
		sm.acknowledged(i, s, &si, &cur, end)
	}
	sm.prev[i], sm.prevBytes[i] = cur, b
	if s.udp != nil {
		d := s.udp.datagrams()
		si.UDP = datagramsSince(sm.prevUDP[i], d)
		sm.prevUDP[i] = d
	}
	return si
}

// acknowledged fills a TCP sender's acknowledged bytes and rate in the
// interval, from its sample cur.
func (sm *sampler) acknowledged(i int, s *Stream, si *model.StreamInterval, cur *model.Sample, end time.Duration) {
	// Once the writes are over the count is final, and caps what the
	// kernel says was acknowledged: its end of file, sent after them, may
	// be acknowledged in a sample that still reads established (tcp_info
	// reads the state before it locks the socket), and must not count.
	var written model.Opt[model.Bytes]
	if s.wrote.Load() {
		written = model.Some(model.Bytes(s.moved.Load()))
	}
	si.AckedBytes = ackedIn(sm.ackBase[i], cur, written, &sm.acked[i])
	// Over the time between the kernel reads: a final sample is taken
	// when the stream ends, not on a tick.
	if a, ok := si.AckedBytes.Get(); ok {
		dt := cur.At - sm.prev[i].At
		if dt <= 0 {
			dt = end - sm.start
		}
		si.AckedRate = model.Some(model.RateOf(a, dt.Seconds()))
	}
}
