package model

import "time"

// Summarize computes the headline of each direction: the receiver's bytes
// over the receiver's time, with the sender's account and the sender's
// kernel counters (retransmissions, RTT) beside it.
func Summarize(run *Run) []DirectionSummary {
	var out []DirectionSummary
	for _, dir := range []Direction{ClientToServer, ServerToClient} {
		ids := run.StreamIDs(dir)
		if len(ids) == 0 {
			continue
		}
		sender, receiver := &run.Client, &run.Remote
		if dir == ServerToClient {
			sender, receiver = receiver, sender
		}
		sum := DirectionSummary{Direction: dir, Streams: len(ids)}
		var sendDur time.Duration
		var written, sent, retrans Bytes
		var segs uint32
		nSend, nRecv := 0, 0
		retransKnown, segsKnown, sentKnown := true, true, true
		var rttSum time.Duration
		var rttN int
		for _, t := range sender.Totals {
			if !ids[t.Stream] {
				continue
			}
			nSend++
			written += t.Bytes
			sendDur = max(sendDur, t.Duration)
			if n, ok := t.RetransSegs.Get(); ok {
				segs += n
			} else {
				segsKnown = false
			}
			if b, ok := t.RetransBytes.Get(); ok {
				retrans += b
			} else {
				retransKnown = false
			}
			if b, ok := t.SentBytes.Get(); ok {
				sent += b
			} else {
				sentKnown = false
			}
			f := t.Final
			if f == nil {
				continue
			}
			if m, ok := sender.MinRTT(t.Stream).Get(); ok && m > 0 && (!sum.MinRTT.OK || m < sum.MinRTT.V) {
				sum.MinRTT = Some(m)
			}
			if f.RTT > 0 {
				rttSum += f.RTT
				rttN++
			}
		}
		var received Bytes
		var recvDur time.Duration
		for _, t := range receiver.Totals {
			if ids[t.Stream] {
				nRecv++
				received += t.Bytes
				recvDur = max(recvDur, t.Duration)
				if t.UDP != nil && sum.UDP == nil {
					c := *t.UDP
					sum.UDP = &c
				} else if t.UDP != nil {
					sum.UDP.Add(t.UDP)
				}
			}
		}
		if nSend > 0 {
			sum.SenderBytes = Some(written)
			sum.SenderRate = Some(RateOf(written, sendDur.Seconds()))
			if segsKnown {
				sum.RetransSegs = Some(segs)
			}
			if retransKnown {
				sum.RetransBytes = Some(retrans)
				if sentKnown && sent > 0 {
					sum.LossRate = Some(float64(retrans) / float64(sent))
				}
			}
		}
		// The receiver's clock decides the headline. Without a receiver's
		// report (the test broke off) what the sender wrote says nothing
		// of what arrived: a black hole swallows it all. The sender's
		// kernel knows what the receiver acknowledged; that is delivered.
		// (bytes_acked counts the SYN's sequence number too.)
		switch {
		case nRecv > 0:
			sum.ReceiverBytes, sum.Duration = Some(received), Some(recvDur)
		case nSend > 0 && sendDur > 0:
			if b, ok := ackedMeasured(run, sender, ids); ok {
				sum.ReceiverBytes, sum.Duration, sum.FromAcks = Some(b), Some(sendDur), true
			}
		}
		if b, ok := sum.ReceiverBytes.Get(); ok && sum.Duration.V > 0 {
			sum.Goodput = Some(RateOf(b, sum.Duration.V.Seconds()))
		}
		if rttN > 0 {
			sum.MeanRTT = Some(rttSum / time.Duration(rttN))
		}
		if sum.UDP != nil {
			sum.LossRate = Some(sum.UDP.LossRate())
		}
		sum.Tail = tailOf(run, sender, receiver, ids)
		out = append(out, sum)
	}
	return out
}

// ackedMeasured is what the sender's kernel saw acknowledged over the
// measured period, the streams in ids together, and whether it is known:
// each stream's final bytes_acked less its count at the omit mark (the
// last omitted interval's sample), or less the SYN's one without -O. The
// final count alone covers the connection's whole life: set against the
// measured duration it overstated a server's own view of a test with -O
// (11.5 Mbit/s where 5.76 had arrived).
func ackedMeasured(run *Run, sender *EndReport, ids map[int]bool) (Bytes, bool) {
	marks := map[int]Bytes{}
	for _, iv := range sender.Intervals {
		if !iv.Omitted {
			continue
		}
		for _, si := range iv.Streams {
			if si.Role != Sender || !ids[si.Stream] {
				continue
			}
			if b, ok := si.TCP.BytesAcked.Get(); ok {
				marks[si.Stream] = b // the last omitted one stands
			}
		}
	}
	var sum Bytes
	n := 0
	for _, t := range sender.Totals {
		if !ids[t.Stream] {
			continue
		}
		if t.Final == nil || !t.Final.BytesAcked.OK {
			return 0, false
		}
		mark, ok := marks[t.Stream]
		switch {
		case run.Config.Omit == 0:
			mark = 1 // bytes_acked counts the SYN's sequence number
		case !ok:
			return 0, false // the mark was not read: the life's count would overstate
		}
		sum += max(t.Final.BytesAcked.V-mark, 0)
		n++
	}
	return sum, n > 0
}

// tailOf sums how a direction's streams were kept near the planned end;
// nil when no stream was held back or cut.
func tailOf(run *Run, sender, receiver *EndReport, ids map[int]bool) *TailSummary {
	var ts TailSummary
	planned := run.Config.Omit + run.Config.Duration
	cut := false
	var written, counted Bytes
	nSend, nRecv := 0, 0
	for _, end := range []*EndReport{sender, receiver} {
		for _, t := range end.Totals {
			if !ids[t.Stream] {
				continue
			}
			if end == sender {
				written += t.AllBytes
				nSend++
			} else {
				counted += t.AllBytes
				nRecv++
			}
			if t.Tail == nil {
				continue
			}
			if from, ok := t.Tail.HeldFrom.Get(); ok {
				ts.HeldFor = Some(max(ts.HeldFor.V, planned-from))
				if q, ok := t.Tail.Queued.Get(); ok {
					ts.Queued = Some(ts.Queued.V + q)
				}
			}
			if at, ok := t.Tail.CutAt.Get(); ok {
				cut = true
				ts.CutAt = Some(max(ts.CutAt.V, at))
			}
		}
	}
	if !ts.HeldFor.OK && !cut {
		return nil
	}
	if cut && nSend > 0 && nRecv > 0 {
		ts.Uncounted = Some(max(written-counted, 0))
	}
	return &ts
}
