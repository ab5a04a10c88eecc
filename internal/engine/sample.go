package engine

import (
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// sample emits one interval per tick until every stream is done, then a
// last, shorter interval ending when the last stream finished.
func (e *End) sample() {
	sm := e.newSampler()
	var start time.Duration
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
	planned := Span(&e.cfg)
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
			end = e.lastEnd(start)
		}
		iv := e.interval(sm, index, end)
		start = end
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

// streamFlow is an end's stream as its sampler reads it.
type streamFlow struct {
	e *End
	s *Stream
}

func (f streamFlow) ID() int                    { return f.s.id }
func (f streamFlow) Role() model.Role           { return f.s.role }
func (f streamFlow) Moved() int64               { return f.s.moved.Load() }
func (f streamFlow) Read() (model.Sample, bool) { return f.e.read(f.s) }

func (f streamFlow) Written() (int64, bool) {
	if f.s.role != model.Sender || !f.s.wrote.Load() {
		return 0, false
	}
	return f.s.moved.Load(), true
}

func (f streamFlow) Datagrams() (model.Datagrams, bool) {
	if f.s.udp == nil {
		return model.Datagrams{}, false
	}
	return f.s.udp.datagrams(), true
}

// newSampler is the end's sampler over its streams, from the samples at
// the omit mark (before it: the streams' first, taken before data moved).
func (e *End) newSampler() *Sampler {
	flows := make([]Flow, len(e.streams))
	for i, s := range e.streams {
		flows[i] = streamFlow{e, s}
	}
	sm := NewSampler(flows, e.omitSample)
	sm.Observe = e.observe
	return sm
}

// interval is the sampler's next interval, numbered index, ending at
// end, with the process's CPU use in it and marked when it began before
// the omit mark.
func (e *End) interval(sm *Sampler, index int, end time.Duration) model.Interval {
	iv := sm.Interval(index, end)
	if c, ok := readCPUClock(e.quotaDir); ok && e.cpuMarkOK {
		iv.CPU = cpuUse(e.cpuMark, c)
		e.cpuMark = c
	}
	// An interval that began before the omit boundary is (at least
	// partly) slow start: marked; the totals start at the omit mark itself.
	iv.Omitted = iv.Start < e.cfg.Omit
	return iv
}
