package diagnose

import (
	"fmt"
	"math"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpmath"
)

// limit decides what held the sender back, in this order: the server's
// rate cap, an end's CPU (cpu.go), the receiving application, the
// receiver's window, the send buffer, the sending application, its
// pacing cap, a policer, loss, or the path itself. The
// first that applies leads; when the window or the send buffer binds and
// loss binds as well, both are returned, in that fixed order, so the
// verdict names the same pair whichever happened to show more in one
// short run.
func limit(v *view, run *model.Run, o Options) []model.Finding {
	if f, ok := serverCapped(v, run); ok {
		return []model.Finding{f}
	}
	if f, ok := cpuBound(v, run); ok {
		return []model.Finding{f}
	}
	if !v.sndKernel {
		return []model.Finding{receiverOnly(v, run, o)}
	}
	if slowReading(v) {
		return []model.Finding{slowReader(v)}
	}
	loss, lossBinds := lossLimited(v, o)
	lossBinds = lossBinds && !pathFull(v)
	// Beside a window or buffer that held the sender, loss binds too
	// only when the rate is at its Mathis bound (within coLoss): a rate
	// at half the bound is the window's alone, whatever a loss or two
	// in the run says.
	with := func(f model.Finding) []model.Finding {
		if lossBinds && float64(v.goodput) >= coLoss*float64(mathisBound(v, o)) {
			return []model.Finding{f, loss}
		}
		return []model.Finding{f}
	}
	if rwndBinds(v) {
		return with(rwndLimited(v, run, o))
	}
	if sndbufBinds(v, run) {
		return with(sndbufLimited(v, run, o))
	}
	if f, ok := appLimit(v, run); ok {
		return []model.Finding{f}
	}
	if v.receivedOK && v.maxPacing > 0 && float64(v.goodput) >= nearWindow*float64(v.streams)*float64(v.maxPacing) {
		return []model.Finding{pacingLimited(v, run)}
	}
	if f, ok := policer(v, o); ok {
		return []model.Finding{f}
	}
	if lossBinds {
		// The receiver's window within reach of the rate binds too: with
		// less loss the rate stops there. Linux's autotuning offers tens
		// of times the rate's window, so a window this close is a cap.
		if v.windowOK && v.receivedOK && float64(v.windowBound) <= coLimit*float64(v.goodput) {
			return []model.Finding{rwndLimited(v, run, o), loss}
		}
		return []model.Finding{loss}
	}
	if f, ok := lossUnsettled(v, o); ok {
		return []model.Finding{f}
	}
	// Heavy loss leaves the headline to the bottleneck only when it cost
	// the transfer nothing.
	if heavy(v) && v.receivedOK && !lossCostsNothing(v) {
		return []model.Finding{lossHeld(v, o)}
	}
	if f, ok := stillGrowing(v); ok {
		return []model.Finding{f}
	}
	return []model.Finding{bottleneck(v, o)}
}

// stillGrowing: the test ended before the congestion control found the
// path's rate. The window held the sender (cwnd-limited most of the
// time), no queue stood and nothing was lost in the measured time, so
// nothing on the path had stopped it, and the rate rose through the
// measured intervals (the last at least growthRise × the first, rising
// in most steps): the window was still growing toward the path's rate
// when the test ended. Slow start that ended early (a loss in it, or
// HyStart's delay test) leaves a loss-based sender growing a segment or
// so a round trip: reno at 137 ms from 2 to 4 Mbit/s over 4 s on a
// 28 Mbit/s path, which was called the bottleneck, healthy.
func stillGrowing(v *view) (model.Finding, bool) {
	rising := float64(v.rateLast) >= growthRise*float64(v.rateFirst) && v.rateRises >= 2.0/3
	if unchecked(v) && v.windowOK && float64(v.windowBound) >= coLimit*float64(v.goodput) {
		// Nothing stopped a loss-based sender's window, and the
		// receiver's had room: it grew all the while, however slowly
		// (cubic near the window it last lost at, reno a segment a
		// round trip on a long path), and the rate is the window's.
		rising = v.rateLast >= v.rateFirst
	}
	if !v.sndKernel || !v.receivedOK || !v.limitedOK || v.limited.Cwnd < limitedShare || v.local || pathFull(v) ||
		v.rateFirst <= 0 || !rising || (v.lossOK && v.loss >= lossyShare && !v.quietMeasured) || grewIntoQueue(v) {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "still-growing", Layer: model.LayerTransport, Severity: model.Warning, Confidence: model.Medium}
	cc := v.cc
	if cc == "" {
		cc = "the congestion control"
	}
	f.Summary = fmt.Sprintf("The test ended before TCP found the path's rate: %s's congestion window grew through the measured time, the rate rising from %s to %s a second with no loss and no queue to stop it, so the %s it averaged is not what the path carries.",
		cc, rate(v.rateFirst), rate(v.rateLast), rate(v.goodput))
	f.Explanation = "A congestion window grows until loss or a queue stops it. When slow start ends early (a loss in it, or HyStart's delay test), a loss-based sender grows its window by about a segment each round trip, which on a long path takes seconds or minutes to reach the path's rate; the test measured the climb, not the path."
	f.Evidence = []model.Evidence{goodputEvidence(v),
		{What: "goodput of the first and the last measured interval", Value: fmt.Sprintf("%s, %s", rate(v.rateFirst), rate(v.rateLast)), Source: v.source(model.Receiver)},
		{What: "share of the steps between measured intervals that rose", Value: pct(v.rateRises), Source: v.source(model.Receiver)},
		lossEvidence(v), rttEvidence(v), limitedEvidence(v)}
	if v.cc != "" {
		f.Evidence = append(f.Evidence, model.Evidence{What: "congestion control", Value: v.cc, Source: v.source(model.Sender)})
	}
	f.Fix = []model.Fix{
		{Where: "application", Kind: "tcpscope", Command: "test for longer (tcpscope test -t 30) so the window reaches the path's rate"},
		{Where: v.senderName(), Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_congestion_control=bbr (it finds the path's rate in a few round trips)"},
	}
	return f, true
}

// grewIntoQueue: the round trip rose through the measured time by a
// queue (atRateQueueMin and atRateQueueSegs at the rate that arrived):
// the window that grew went into a queue at the bottleneck, not into
// rate, so it had found the path by the end. Cubic regrowing to the
// window it last lost at does this in its last seconds (43.7 Mbit/s,
// 66.5 ms: 3.1 ms more by the last interval at 95% of the path; 16.6
// Mbit/s, 163 ms: 6.9 ms at 94%), where a window growing below the path
// leaves the round trip flat (reno at 106 ms, 64% of the path: 0.01 ms;
// cubic toward a policer: 0.1 ms, one segment).
func grewIntoQueue(v *view) bool {
	return v.rttRise >= atRateQueueMin && v.mss > 0 && segsIn(v.goodput, v.rttRise, v.mss) >= atRateQueueSegs
}

// lossHeld: heavy loss that no other rule explains, and that cost the
// transfer: it was not at the path's ceiling with a queue standing. The
// loss is then what held the sender (nothing in the hosts did), whatever
// its pattern; the finding says what it cost.
func lossHeld(v *view, o Options) model.Finding {
	f := model.Finding{ID: "loss-limited", Layer: model.LayerNetwork, Severity: model.Critical, Confidence: model.Medium}
	how := fmt.Sprintf("%.3g%% of the bytes sent were retransmitted", 100*v.loss)
	if v.rtos > 0 {
		how += fmt.Sprintf(" and the sender spent %s of the time in %d retransmission timeouts", pct(v.rtoShare()), v.rtos)
	}
	where := "no queue stood on the path, so its rate was not what held the sender"
	if pathFull(v) || queueStood(v) {
		where = "the transfer stayed below the highest rate the kernel measured the path delivering"
	}
	f.Summary = fmt.Sprintf("Packet loss limits this transfer: %s, and %s; nothing in the hosts held it back. %s", how, where, lossCost(v))
	f.Explanation = "A sender loses rate at every loss: a loss-based congestion control (reno, cubic) cuts its window, a timeout restarts it from one segment, and every retransmitted byte crosses the path twice. " +
		"This loss's pattern fits none of the sharper rules (random loss at the Mathis bound, a policer's drops at a ceiling): bursts of loss, an outage, or loss from several causes at once. Find where packets are lost."
	f.Evidence = []model.Evidence{goodputEvidence(v), lossEvidence(v), rttEvidence(v),
		{What: fmt.Sprintf("Mathis bound, C = %.2f", o.c()), Value: rate(mathisBound(v, o))}}
	if v.rtos > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "retransmission timeouts, and the share of the time in them", Value: fmt.Sprintf("%d, %s", v.rtos, pct(v.rtoShare())), Source: v.source(model.Sender)})
	}
	if v.deliveryMax > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "highest delivery rate the kernel measured", Value: rate(v.deliveryMax), Source: v.source(model.Sender)})
	}
	if v.limitedOK {
		f.Evidence = append(f.Evidence, limitedEvidence(v))
	}
	f.Evidence = append(f.Evidence, lossCostEvidence(v)...)
	if v.cc != "" {
		f.Evidence = append(f.Evidence, model.Evidence{What: "congestion control", Value: v.cc, Source: v.source(model.Sender)})
	}
	f.Fix = []model.Fix{
		{Where: "path", Kind: "ethtool", Command: "on each host and router interface along the path: ethtool -S IFACE | grep -iE 'err|drop|crc'; ip -s link show IFACE"},
		{Where: "path", Kind: "tcpscope", Command: "tcpscope test -C cubic and -C bbr, and at other times of day: loss that follows the rate is a policer or a queue, loss that does not is the path's"},
	}
	if v.windowOK && v.windowBound > 0 {
		f.Effect = fmt.Sprintf("without the loss the same window carries up to %s", rate(v.windowBound))
		f.Predicted = model.Some(min(v.windowBound, max(v.deliveryMax, v.goodput)))
	}
	return f
}

// lossEvidence is the retransmitted share the loss rules read.
func lossEvidence(v *view) model.Evidence {
	return model.Evidence{What: "retransmitted share of bytes sent", Value: fmt.Sprintf("%.4f%% (%d segments)", 100*v.loss, v.retrans), Source: v.source(model.Sender)}
}

// underDelivered: the kernel measured deliveries at well above the rate
// the transfer averaged (not over loopback, whose delivery samples run
// to hundreds of Gbit/s): the path was not what set the rate.
func underDelivered(v *view) bool {
	share, ok := v.ofDelivery()
	return !v.local && ok && share < deliveredShare
}

// lossUnsettled: a loss-based sender above its Mathis bound with nothing
// else to hold it: no queue stood (so the path's rate was not reached),
// the path delivered far more at moments than the transfer averaged, the
// congestion window held the sender, and it lost packets. Its window was
// still coming down from slow start toward the bound: on a long path a
// short test holds few losses (0.1% loss at 100 ms, cubic: 16 in 4 s,
// 10.4 Mbit/s at 3.2 × a 3.27 Mbit/s bound, 25 Mbit/s delivered at
// moments, on a 100 Mbit/s path). The bottleneck did not set that rate:
// the loss did, and a longer test only brings it nearer the bound.
func lossUnsettled(v *view, o Options) (model.Finding, bool) {
	l := v.limited
	if v.cc == "bbr" || v.cc == "" || !v.lossOK || v.loss < lossFloor || v.mss <= 0 || v.minRTT <= 0 || pathFull(v) ||
		!underDelivered(v) || !v.limitedOK || l.Cwnd < limitedShare {
		return model.Finding{}, false
	}
	bound := mathisBound(v, o)
	if float64(v.goodput) < float64(bound) {
		return model.Finding{}, false // under the bound: lossLimited's band decides
	}
	f := model.Finding{ID: "loss-limited", Layer: model.LayerNetwork, Severity: model.Critical, Confidence: model.Medium}
	f.Summary = fmt.Sprintf("Packet loss limits this transfer: %.3g%% of the bytes sent were retransmitted, and with no queue on the path the %s congestion window, cut at each loss, held the sender at %s while the path delivered up to %s; it was still falling toward the Mathis bound at %v, %s.",
		100*v.loss, v.cc, rate(v.goodput), rate(v.deliveryMax), v.minRTT.Round(time.Microsecond), rate(bound))
	f.Explanation = "A loss-based congestion control (reno, cubic) cuts its window at every loss; from slow start's peak it takes many losses to settle at the Mathis bound, C·MSS/(RTT·√p), and a long path's short test ends before. " +
		"No queue built up, so the path's rate was never reached: the window, cut by loss, was the limit. Find where packets are lost."
	f.Evidence = []model.Evidence{
		goodputEvidence(v),
		lossEvidence(v),
		rttEvidence(v),
		{What: "highest delivery rate the kernel measured", Value: rate(v.deliveryMax), Source: v.source(model.Sender)},
		{What: fmt.Sprintf("Mathis bound, C = %.2f", o.c()), Value: rate(bound)},
		limitedEvidence(v),
		{What: "congestion control", Value: v.cc, Source: v.source(model.Sender)},
	}
	f.Fix = []model.Fix{
		{Where: "path", Kind: "ethtool", Command: "on each host and router interface along the path: ethtool -S IFACE | grep -iE 'err|drop|crc'; ip -s link show IFACE"},
		{Where: v.senderName(), Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_congestion_control=bbr (does not read random loss as congestion)"},
	}
	f.Effect = fmt.Sprintf("at this loss a loss-based sender settles near %s; every halving of the loss rate raises that by √2", rate(bound))
	f.Predicted = model.Some(bound)
	return f, true
}

// rwndBinds: the receiver's window held the sender back. Not with a
// queue built up on the path: a window that lets a queue stand is larger
// than the path's bandwidth-delay product, and the bottleneck, not the
// window, sets the rate.
func rwndBinds(v *view) bool {
	l := v.limited
	switch {
	case pathFull(v):
		return false
	case v.local:
		// Over loopback the window holds what the reader has not yet
		// taken, and any congestion window outgrows it: only a sender
		// that waited on it most of the time was held by it.
		return v.limitedOK && l.Rwnd >= limitedShare && l.Rwnd >= l.Cwnd
	}
	atWindow := v.windowOK && v.receivedOK && float64(v.goodput) >= nearWindow*float64(v.windowBound)
	receiverBound := v.cwndOverRwnd >= limitedShare && v.loss < lossFloor
	switch {
	case receiverBound && (!v.limitedOK || l.Rwnd >= rwndSomeShare):
		return true
	case v.limitedOK && l.Rwnd >= limitedShare && l.Rwnd >= l.Cwnd:
		return true
	case atWindow && (!v.limitedOK || l.Rwnd >= rwndSomeShare):
		// The kernel counts receive-window-limited time only while the
		// window is completely full; with cwnd ≈ rwnd the two alternate,
		// and goodput at window/RTT is the telling sign.
		return true
	case lossBased(v) && !unchecked(v) && v.limitedOK && l.Rwnd >= rwndSomeShare && v.windowOK && v.receivedOK &&
		float64(v.goodput) >= sawtoothFloor*float64(v.windowBound):
		// A loss-based sender that lost in the measured time falls back
		// after each loss and regrows: its peaks met the window (the
		// kernel counted it waiting there), and its average sits below
		// it, out of atWindow's reach. Reno with a 628 KiB receive
		// buffer, one loss in 4 s on a 216 Mbit/s, 26.6 ms path:
		// 24% window-limited at 0.81 of what the window carries, read
		// as the path's bottleneck at 45% of the path (r8000#2).
		return true
	}
	return false
}

// otherEnd is what the other end of the connection must also allow for
// a window of buf to carry what the fix predicts: a receiver's larger
// window needs the sender's send buffer to hold it in flight, and a
// sender's larger buffer needs the receiver to offer the window. Nothing
// when the other end's settings already allow it, or were not read (a
// stock iperf3 peer: the fix's prediction assumes it keeps up).
func otherEnd(v *view, buf model.Bytes, recv bool) []model.Fix {
	other := bufferFix{where: v.senderName(), set: v.sndSet}
	if !recv {
		other = bufferFix{where: v.receiverName(), recv: true, set: v.rcvSet}
	}
	has, ok := other.allows()
	if !ok || has >= buf {
		return nil
	}
	fx, _ := other.fixes(buf, false)
	for i := range fx {
		fx[i].Command += fmt.Sprintf(" (this end allows %s, less than the other end's new %s)", has.Binary(), buf.Binary())
	}
	return fx
}

// targetWindow is the window the fix should allow: the target's BDP, or
// without a target four times today's window (enough to show whether the
// window was the limit).
func targetWindow(v *view, o Options, now model.Bytes) (model.Bytes, model.Bitrate) {
	perStream := float64(max(v.streams, 1))
	if o.Target > 0 {
		w := model.Bytes(math.Ceil(float64(tcpmath.BDP(o.Target, v.minRTT)) / perStream))
		return max(w, now), o.Target
	}
	w := 4 * max(now, 64*model.KiB)
	return w, model.Bitrate(perStream * float64(tcpmath.WindowRate(w, v.minRTT)))
}

func rwndLimited(v *view, run *model.Run, o Options) model.Finding {
	f := model.Finding{ID: "rwnd-limited", Layer: model.LayerTransport, Severity: model.Critical, Confidence: model.High}
	win := v.peerWindow
	f.Evidence = append(f.Evidence, goodputEvidence(v))
	if v.limitedOK {
		f.Evidence = append(f.Evidence, limitedEvidence(v))
	} else {
		f.Confidence = model.Medium
	}
	f.Evidence = append(f.Evidence,
		model.Evidence{What: "largest window the receiver advertised", Value: win.Binary(), Source: v.source(model.Sender)},
		rttEvidence(v),
		model.Evidence{What: "window/RTT bound", Value: rate(v.windowBound)})
	if v.rcvBuf > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "receiver's socket buffer (SO_RCVBUF as granted)", Value: v.rcvBuf.Binary(), Source: v.source(model.Receiver)})
	}
	if v.optsOK && !v.opts.WindowScaling && win <= fullWindow64K {
		// The seed's case: without window scaling no buffer helps.
		f.ID = "wscale-off"
		f.Summary = fmt.Sprintf("Window scaling is off, so the receiver can offer at most 64 KiB: %s at this RTT, and the transfer got %s.",
			rate(tcpmath.WindowRate(fullWindow64K, v.minRTT)), rate(v.goodput))
		f.Explanation = wscaleExplanation
		f.Evidence = append(f.Evidence, model.Evidence{What: "window scaling negotiated", Value: "no", Source: v.source(model.Sender)})
		f.Fix = wscaleFix()
		w, r := targetWindow(v, o, fullWindow64K)
		f.Effect = fmt.Sprintf("with window scaling and %s of receive buffer the window bound rises from %s to about %s",
			bufferFor(w).Binary(), rate(v.windowBound), rate(r))
		f.Predicted = model.Some(r)
		return f
	}
	w, r := targetWindow(v, o, win)
	buf := bufferFor(w)
	switch {
	case !v.limitedOK:
		f.Summary = fmt.Sprintf("The receiver's window limits this transfer: goodput %s is the window/RTT bound %s (%s per %v).",
			rate(v.goodput), rate(v.windowBound), win.Binary(), v.minRTT.Round(time.Microsecond))
	case v.limited.Rwnd < rwndSomeShare:
		// Bound with loss: the window caps what the sender reaches
		// between losses.
		f.Summary = fmt.Sprintf("The receiver's window caps this transfer at %s (%s per round trip of %v): loss held the sender below it in this run (it waited on the window %s of the time), and with less loss it stops there.",
			rate(v.windowBound), win.Binary(), v.minRTT.Round(time.Microsecond), pct(v.limited.Rwnd))
	default:
		f.Summary = fmt.Sprintf("The receiver's window limits this transfer: the sender waited on it %s of the time, and %s per round trip of %v allows %s.",
			pct(v.limited.Rwnd), win.Binary(), v.minRTT.Round(time.Microsecond), rate(v.windowBound))
	}
	f.Explanation = "TCP can have at most one receive window of data in flight per round trip, so the rate is at most window/RTT. The receiver's window comes from its socket buffer: " +
		"the autotuning maximum net.ipv4.tcp_rmem, or a fixed SO_RCVBUF (which turns autotuning off). A long path needs a window of its bandwidth-delay product."
	var allowed bool
	f.Fix, allowed = bufferFix{where: v.receiverName(), recv: true, set: v.rcvSet}.fixes(buf, run.Config.Window > 0)
	f.Fix = append(f.Fix, otherEnd(v, buf, true)...)
	if allowed {
		f.Explanation += fmt.Sprintf(" This receiver's kernel already allows a %s buffer (net.ipv4.tcp_rmem), so the window was held smaller by the application or by autotuning's pace.", buf.Binary())
	}
	f.Effect = fmt.Sprintf("raising the receiver's buffer to %s lifts the window bound from %s to about %s", buf.Binary(), rate(v.windowBound), rate(r))
	if o.Target == 0 {
		f.Effect += " (with --target-rate the fix is sized for your path)"
	}
	f.Predicted = model.Some(r)
	return f
}

const wscaleExplanation = "Without the window scale option (RFC 7323) a TCP window is a 16-bit number, at most 65,535 bytes, and a sender can have no more than one window in flight per round trip. " +
	"Either end can turn it off, and a middlebox can strip it from the handshake; then no buffer size helps."

func wscaleFix() []model.Fix {
	return []model.Fix{{Where: "both ends", Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_window_scaling=1"},
		{Where: "path", Kind: "firewall", Command: "if both ends have it on, find the middlebox that strips TCP options from SYNs"}}
}

// slowReading: the receiving application left data unread while the
// sender waited on the window. The receiver's own queue (SIOCINQ) shows
// it directly: a median of unread bytes at least the window it advertised
// (a reader that keeps up leaves next to nothing). Unread data alone is
// not enough: over loopback the bytes arrive as fast as they are written
// and sit a moment in any reader's queue, so the sender must also have
// waited on the window. Runs recorded without the queue, or with the
// receiver's kernel unread, fall back on the window's shape: a median
// window many times below the largest means a buffer full of unread data.
func slowReading(v *view) bool {
	waited := v.cwndOverRwnd >= limitedShare || (v.limitedOK && v.limited.Rwnd >= rwndSomeShare)
	if v.local {
		// Over loopback any reader is slower than the delivery, and
		// the congestion window outgrows any receive window: the
		// sender must have waited on the reader most of the time.
		waited = v.limitedOK && v.limited.Rwnd >= limitedShare
	}
	if v.recvQOK && v.windowOK {
		return waited && v.medianRecvQ >= minUnread && v.medianRecvQ >= v.medianWindow
	}
	receiverBound := v.cwndOverRwnd >= limitedShare && v.loss < lossFloor
	return v.windowOK && receiverBound && v.medianWindow > 0 && v.medianWindow*slowReaderRatio < v.peerWindow
}

// slowReadingReceiver is slowReading from the receiver's end alone (the
// sender's kernel was not read): unread data at least the window the
// receiver advertised, and that window shrunk to under a quarter of its
// largest.
func slowReadingReceiver(v *view) bool {
	return v.recvQOK && v.rcvWndOK && v.medianRecvQ >= minUnread && v.medianRecvQ >= v.rcvWndMedian &&
		v.rcvWndMedian*slowReaderRatio <= v.rcvWndMax
}

func slowReader(v *view) model.Finding {
	f := model.Finding{ID: "slow-reader", Layer: model.LayerApplication, Severity: model.Critical, Confidence: model.High}
	med, top, from, rtt := v.medianWindow, v.peerWindow, v.source(model.Sender), v.minRTT
	if !v.windowOK {
		// Only the receiver's end was read: its own account of the
		// window it offered.
		med, top, from, rtt = v.rcvWndMedian, v.rcvWndMax, v.source(model.Receiver), v.rcvRTT
	}
	f.Summary = fmt.Sprintf("The receiving application reads slower than the network delivers: its window stayed near %s (median) although its buffer allowed %s, and the transfer got %s.",
		med.Binary(), top.Binary(), rate(v.goodput))
	f.Explanation = "A receiver advertises the free space in its buffer. When the application does not read, the buffer fills with unread data and the window closes to what each read frees; the sender, with a congestion window many times larger, waits. A bigger buffer only postpones it: the application must read faster."
	f.Evidence = []model.Evidence{
		goodputEvidence(v),
		{What: "receiver's advertised window, median and largest", Value: fmt.Sprintf("%s, %s", med.Binary(), top.Binary()), Source: from},
	}
	if v.windowOK {
		f.Evidence = append(f.Evidence, model.Evidence{What: "samples with the congestion window ≥ 2 × the receiver's window", Value: pct(v.cwndOverRwnd), Source: v.source(model.Sender)})
	}
	if v.recvQOK {
		f.Evidence = append(f.Evidence, model.Evidence{What: "bytes received and not yet read by the application (median)", Value: v.medianRecvQ.Binary(), Source: v.source(model.Receiver)})
	}
	switch {
	case !v.sndKernel:
		f.Confidence = model.Medium
		f.Summary += " Seen from the receiver's end only: the sender's kernel was not read."
		if v.rcvRTT > 0 {
			f.Evidence = append(f.Evidence, model.Evidence{What: "receiver's RTT estimate (rcv_rtt, median)", Value: v.rcvRTT.Round(time.Microsecond).String(), Source: v.source(model.Receiver)})
		}
	case !v.recvQOK:
		f.Confidence = model.Medium
		if !v.rcvKernel {
			f.Summary += " Seen from the sender's end only: the receiver's kernel was not read."
		}
		f.Evidence = append(f.Evidence, rttEvidence(v))
	default:
		f.Evidence = append(f.Evidence, rttEvidence(v))
	}
	if v.limitedOK {
		f.Evidence = append(f.Evidence, limitedEvidence(v))
	}
	if v.zeroWindows > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "samples with a closed window (under two segments)", Value: fmt.Sprintf("%d of %d", v.zeroWindows, v.samples), Source: v.source(model.Sender)})
	}
	f.Fix = []model.Fix{{Where: "application", Kind: "application", Command: "make the receiver read faster: larger reads, less work between reads, a faster disk or a separate writer thread behind it; check its CPU"}}
	if rtt > 0 && top > 0 {
		f.Effect = fmt.Sprintf("the window can then open to %s, which carries %s at this RTT", top.Binary(),
			rate(model.Bitrate(float64(max(v.streams, 1))*float64(tcpmath.WindowRate(top, rtt)))))
	}
	return f
}

// sndbufBinds: the send buffer held the sender back. The kernel's chrono
// counts send-buffer-limited time only when its SOCK_NOSPACE bookkeeping
// sees a blocked writer while the congestion window is not the limit,
// which misses most non-blocking writers (tcpscope's own, Go's, Node's,
// nginx's) and slow start: its counter can read 1% with the buffer full
// all along. The samples show a full buffer directly: nothing left
// unsent, in flight far below both the congestion window and the
// receiver's window, in a sender whose application always has data (a
// memory-to-memory test not paced by -b), or whose send queue sat at the
// same ceiling in every such sample (a watched socket, application
// unknown).
func sndbufBinds(v *view, run *model.Run) bool {
	l := v.limited
	fullInSamples := v.fullShare >= appShare && v.fullSamples >= minFullSamples
	if pacedAtCap(v) {
		return false // the pace holds it, and fills its queue behind it
	}
	switch {
	case bufferHeld(v, run):
		// Before the path's queue is read: the congestion window had
		// room, so whatever queue stood was not what held the sender.
		return true
	case idledByBuffer(v, run):
		// Before the path's queue is read too: the bursts the buffer
		// lets out queue for a moment at the bottleneck.
		return true
	case overrunBinds(v, run):
		// Before the path's queue is read: the bursts past the buffer
		// queue at the bottleneck for a moment (4 ms at 52 Mbit/s of
		// 100 Mbit/s, 20 ms, with a 64 KiB buffer) and the kernel counts
		// the congestion window as the limit in each.
		return true
	case pathFull(v) && !v.local && v.limitedOK && l.Sndbuf >= limitedShare && l.Sndbuf >= l.Cwnd && fullInSamples:
		// A full buffer's bursts queue for a moment at the bottleneck
		// (3 ms at 28 Mbit/s of 100 Mbit/s, 20 ms with a 64 KiB
		// buffer), but the kernel counted the sender waiting on the
		// buffer most of the time and the samples show in flight under
		// half the congestion window: the congestion control had room
		// to send more, so the path's rate was not reached.
		return true
	case pathFull(v):
		return false // the buffer held more than the path's BDP: the bottleneck set the rate
	case v.local:
		// Over loopback "in flight" is the reader's backlog: a full
		// send buffer there is the reader's pace, which a larger
		// buffer does not change; only the kernel's own count counts.
		return v.limitedOK && l.Sndbuf >= limitedShare && l.Sndbuf >= l.Cwnd
	case v.limitedOK && l.Sndbuf >= sndbufShare && l.Sndbuf >= l.Cwnd:
		return true
	}
	return v.fullShare >= appShare && v.fullSamples >= minFullSamples && run.Config.Bitrate == 0 && (v.test || v.sendQPlateau)
}

// bufferHeld: a memory-to-memory sender (it always has data; no -b) in
// which most measured samples (at least minFullSamples) show the send
// buffer holding it: nothing unsent, the send queue at half the buffer
// or more, in flight under 90% of the congestion window and of the
// receiver's window. A sender its congestion window holds has unsent
// data queued behind it (autotuning makes the buffer twice the window),
// so an empty unsent queue with room in both windows is the buffer. The
// idle test (in flight under half the window) missed a reno sender
// regrowing after a loss: a 914 KiB buffer at 95.7 Mbit/s, 122 ms held
// 400 kB in flight against a 780 kB window in every sample.
func bufferHeld(v *view, run *model.Run) bool {
	return !v.local && v.test && run.Config.Bitrate == 0 && v.bufBoundSamples >= minFullSamples && v.bufBoundShare >= appShare
}

// pacedAtCap: the sender ran at its pacing cap (SO_MAX_PACING_RATE, per
// stream): its send queue fills behind the pace, which is what holds it
// (--fq-rate 3.21 Mbit/s read as a full send buffer, the pace's).
func pacedAtCap(v *view) bool {
	return v.receivedOK && v.maxPacing > 0 && float64(v.goodput) >= nearWindow*float64(max(v.streams, 1))*float64(v.maxPacing)
}

// idledByBuffer: a memory-to-memory sender (it always has data; no -b)
// whose largest send buffer holds less than the bandwidth-delay product
// at the highest rate the kernel measured delivering, averaged well
// under that rate (under deliveredShare of it, per stream), with no loss
// to explain the gap (its Mathis bound at least 1.5 × the rate) and the
// receiver's window far from the limit (its bound 3 × the rate or
// more). Nothing else idles such a sender: its buffer ran dry of room
// between bursts, whatever the samples caught. The kernel counts those
// bursts as congestion-window time and a sample catches a queue past the
// buffer only now and then (2 of 4 in one run of a 810 KiB buffer at
// 368 Mbit/s, 43 ms: 169 Mbit/s, delivered at up to 359; 1 of 4 in
// another, called the bottleneck).
func idledByBuffer(v *view, run *model.Run) bool {
	if v.local || !v.test || run.Config.Bitrate != 0 || v.sndBufMax <= 0 || v.deliveryFloor <= 0 || v.minRTT <= 0 || !underDelivered(v) {
		return false
	}
	if v.lossOK && v.loss >= lossFloor && v.mss > 0 && float64(mathisBound(v, Options{})) < 1.5*float64(v.goodput) {
		return false // loss explains the rate
	}
	if !v.windowOK || float64(v.windowBound) < coLimit*float64(v.goodput) {
		return false // the receiver's window may be what held it
	}
	return model.SockBufData(v.sndBufMax) < tcpmath.BDP(v.deliveryFloor, v.minRTT)
}

// overrunBinds: in most measured samples the send queue ran past its
// buffer (overrun), and the buffer is smaller than the bandwidth-delay
// product at the highest rate the kernel measured delivering (any
// sample: a floor of the path's rate, so the test errs toward the path
// being the limit): between
// bursts the sender waited for its queue to drain below the buffer, so
// the path idled. Not over loopback, whose "in flight" is the reader's
// backlog, nor with -b, whose writer waits on its pace.
func overrunBinds(v *view, run *model.Run) bool {
	if v.local || run.Config.Bitrate != 0 || v.overrunSamples < minFullSamples || v.overrunShare < appShare ||
		v.deliveryFloor <= 0 || v.minRTT <= 0 {
		return false
	}
	// The buffer's data (half its size: the kernel counts its overhead)
	// against the BDP: a 339 KiB buffer at 17.5 Mbit/s, 160 ms held
	// 170 KiB in flight where the path's BDP is 342 kB, and compared
	// whole it read as holding enough.
	return model.SockBufData(v.overrunBuf) < tcpmath.BDP(v.deliveryFloor, v.minRTT)
}

func sndbufLimited(v *view, run *model.Run, o Options) model.Finding {
	f := model.Finding{ID: "sndbuf-limited", Layer: model.LayerHost, Severity: model.Critical, Confidence: model.High}
	// The buffer as autotuning grew it (the largest sampled), not as it
	// was at setup: a fix sized from the setup's 45 KiB predicted half
	// the rate the transfer already got.
	now := max(model.SockBufData(max(v.sndBuf, v.sndBufMax)), v.idleSendQ, 64*model.KiB)
	if v.receivedOK && v.minRTT > 0 {
		// At least the window the rate got took: a sender let past its
		// buffer in bursts (overrun) moved more than the buffer holds,
		// and a fix sized from the buffer alone predicted 41.9 Mbit/s
		// where a 128 KiB buffer's bursts had got 45.1.
		now = max(now, tcpmath.BDP(model.Bitrate(float64(v.goodput)/float64(max(v.streams, 1))), v.minRTT))
	}
	w, r := targetWindow(v, o, now)
	buf := bufferFor(w)
	chrono := v.limitedOK && v.limited.Sndbuf >= sndbufShare && v.limited.Sndbuf >= v.limited.Cwnd
	over := !chrono && overrunBinds(v, run)
	idled := !chrono && !over && idledByBuffer(v, run)
	if over || idled {
		now = max(now, model.SockBufData(max(v.overrunBuf, v.sndBufMax)))
		w, r = targetWindow(v, o, now)
		buf = bufferFor(w)
	}
	f.Summary = fmt.Sprintf("The sender's socket buffer limits this transfer: it was full %s of the time.", pct(v.limited.Sndbuf))
	switch {
	case over:
		f.Summary = fmt.Sprintf("The sender's socket buffer limits this transfer: its %s is less than the path's bandwidth-delay product (%s: up to %s delivered, %v round trip), and in %s of the samples the send queue held %s, past the buffer. "+
			"The application waited for the queue to drain below the buffer, and each time the congestion window sent what it then wrote in one burst, so the path idled between bursts.",
			v.overrunBuf.Binary(), tcpmath.BDP(v.deliveryFloor, v.minRTT).Decimal(), rate(v.deliveryFloor), v.minRTT.Round(time.Microsecond), pct(v.overrunShare), v.overrunSendQ.Binary())
		if !v.test {
			f.Confidence = model.Medium // the application is not known to have had more
		}
	case idled:
		share, _ := v.ofDelivery()
		f.Summary = fmt.Sprintf("The sender's socket buffer limits this transfer: its largest, %s, is less than the path's bandwidth-delay product (%s: up to %s delivered, %v round trip), and the transfer averaged %s of that rate with no loss or window to explain it. "+
			"Between bursts the application had no room to queue more, and the path idled.",
			v.sndBufMax.Binary(), tcpmath.BDP(v.deliveryFloor, v.minRTT).Decimal(), rate(v.deliveryFloor), v.minRTT.Round(time.Microsecond), pct(share))
		f.Confidence = model.Medium
	case !chrono:
		f.Summary = fmt.Sprintf("The sender's socket buffer limits this transfer: in %s of the samples it held %s sent and unacknowledged with nothing more unsent, while the congestion window allowed %s and the receiver offered %s; %s per round trip of %v is %s.",
			pct(v.fullShare), v.idleSendQ.Binary(), v.idleCwnd.Binary(), v.peerWindow.Binary(), v.idleFlight.Binary(), v.minRTT.Round(time.Microsecond),
			rate(model.Bitrate(float64(max(v.streams, 1))*float64(tcpmath.WindowRate(v.idleFlight, v.minRTT)))))
		if !v.test {
			f.Confidence = model.Medium // the application is not known to have had more
		}
	}
	f.Explanation = "A sender keeps every byte in its send buffer until it is acknowledged, so the buffer must hold a bandwidth-delay product. " +
		"Its ceiling is net.ipv4.tcp_wmem's maximum, or a fixed SO_SNDBUF. A full buffer leaves nothing unsent while both windows have room: the application is blocked, not idle."
	f.Evidence = []model.Evidence{goodputEvidence(v)}
	if over {
		f.Evidence = append(f.Evidence,
			model.Evidence{What: "samples with the send queue past its buffer (by half again and 64 KiB)", Value: pct(v.overrunShare), Source: v.source(model.Sender)},
			model.Evidence{What: "in them (median): send queue, send buffer", Value: fmt.Sprintf("%s, %s", v.overrunSendQ.Binary(), v.overrunBuf.Binary()), Source: v.source(model.Sender)},
			model.Evidence{What: "highest delivery rate the kernel measured (application-limited samples included)", Value: rate(v.deliveryFloor), Source: v.source(model.Sender)})
	}
	if idled {
		f.Evidence = append(f.Evidence,
			model.Evidence{What: "largest send buffer sampled (SO_SNDBUF as autotuning grew it)", Value: v.sndBufMax.Binary(), Source: v.source(model.Sender)},
			model.Evidence{What: "highest delivery rate the kernel measured (application-limited samples included)", Value: rate(v.deliveryFloor), Source: v.source(model.Sender)})
	}
	if v.idleSamples > 0 {
		f.Evidence = append(f.Evidence,
			model.Evidence{What: "samples with the send buffer full: nothing unsent, at least 16 KiB queued, both windows with room", Value: pct(v.fullShare), Source: v.source(model.Sender)},
			model.Evidence{What: "in the idle samples (median): send queue, unsent, in flight, congestion window", Value: fmt.Sprintf("%s, %s, %s, %s",
				v.idleSendQ.Binary(), v.idleNotsent.Binary(), v.idleFlight.Binary(), v.idleCwnd.Binary()), Source: v.source(model.Sender)})
	}
	if v.windowOK {
		f.Evidence = append(f.Evidence, model.Evidence{What: "largest window the receiver advertised", Value: v.peerWindow.Binary(), Source: v.source(model.Sender)})
	}
	if v.limitedOK {
		f.Evidence = append(f.Evidence, limitedEvidence(v))
	}
	f.Evidence = append(f.Evidence, rttEvidence(v))
	if v.sndBuf > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "sender's socket buffer at setup (SO_SNDBUF as granted; autotuning grows it)", Value: v.sndBuf.Binary(), Source: v.source(model.Sender)})
	}
	var allowed bool
	f.Fix, allowed = bufferFix{where: v.senderName(), set: v.sndSet}.fixes(buf, run.Config.Window > 0)
	f.Fix = append(f.Fix, otherEnd(v, buf, false)...)
	if allowed {
		f.Explanation += fmt.Sprintf(" This sender's kernel already allows a %s buffer (net.ipv4.tcp_wmem), so the buffer was held smaller by the application's own SO_SNDBUF.", buf.Binary())
	}
	f.Effect = fmt.Sprintf("a %s send buffer allows about %s", buf.Binary(), rate(r))
	f.Predicted = model.Some(r)
	return f
}

// appLimit: the sending application is the limit. With -b it is the rate
// asked for (goodput at it, or the sender idle between the paced
// writes); without, a sender whose kernel counted it idle most of the
// time, or (a watched socket whose application is unknown) one idle in
// most samples with a send queue that was not held at a ceiling.
func appLimit(v *view, run *model.Run) (model.Finding, bool) {
	asked := model.Bitrate(float64(run.Config.Bitrate) * float64(max(v.streams, 1)))
	switch {
	case asked > 0 && v.receivedOK && float64(v.goodput) >= appRateShare*float64(asked):
		return appRateLimit(v, run, asked), true
	case asked > 0 && v.sndKernel && v.idleShare >= appShare:
		return appRateLimit(v, run, asked), true
	case v.sndKernel && v.limitedOK && v.limited.App >= appShare:
		return appLimited(v, run), true
	case v.sndKernel && !v.test && v.idleShare >= appShare && !v.sendQPlateau && v.instants >= minIdleInstants:
		return appLimited(v, run), true
	}
	return model.Finding{}, false
}

// appRateLimit: -b (tcpscope's, or a stock iperf3 client's) set the rate.
func appRateLimit(v *view, run *model.Run, asked model.Bitrate) model.Finding {
	f := model.Finding{ID: "sender-app-limited", Layer: model.LayerApplication, Severity: model.Info, Confidence: model.High}
	f.Summary = fmt.Sprintf("The application's own rate limit is the limit: -b asked for %s, and the transfer got %s.", rate(asked), rate(v.goodput))
	f.Explanation = "The sending application writes no faster than the rate it was given (tcpscope's and iperf3's -b), so the test shows that rate, not what the path carries."
	f.Evidence = []model.Evidence{goodputEvidence(v), {What: "write rate asked for (-b, all streams)", Value: rate(asked)}}
	if v.sndKernel && v.idleSamples > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "samples with nothing unsent while both windows had room", Value: pct(v.idleShare), Source: v.source(model.Sender)})
	}
	if float64(v.goodput) < appRateShare*float64(asked) {
		// The writer fell short of its own rate: the CPU, or writes too
		// small for the rate.
		f.Severity, f.Confidence = model.Warning, model.Medium
		f.Summary = fmt.Sprintf("The sending application did not reach its own rate limit: -b asked for %s, the transfer got %s, and the sender had nothing to send in %s of the samples.",
			rate(asked), rate(v.goodput), pct(v.idleShare))
		f.Fix = []model.Fix{{Where: "application", Kind: "application", Command: "check the sender's CPU (top, mpstat) while it runs" + largerBlocks(run)}}
		return f
	}
	f.Fix = []model.Fix{{Where: "application", Kind: "tcpscope", Command: "test without -b to see what the path carries"}}
	return f
}

// largerBlocks suggests larger writes only to a sender writing small
// ones: tcpscope and iperf3 write 128 KiB or more by default.
func largerBlocks(run *model.Run) string {
	if l := run.Config.Length; l > 0 && l < 128*model.KiB {
		return fmt.Sprintf(", and write larger blocks than %s (tcpscope test -l 1M)", l.Binary())
	}
	return ""
}

func appLimited(v *view, run *model.Run) model.Finding {
	f := model.Finding{ID: "sender-app-limited", Layer: model.LayerApplication, Severity: model.Warning, Confidence: model.Medium}
	share, what := v.idleShare, "of the samples"
	if v.limitedOK && v.limited.App >= appShare {
		share, what, f.Confidence = v.limited.App, "of the time", model.High
	}
	f.Summary = fmt.Sprintf("The sending application did not keep the connection busy: the kernel had nothing to send %s %s.", pct(share), what)
	f.Explanation = "The window had room and the socket had nothing queued: the kernel waited for the application to write. In a memory-to-memory test that means a busy CPU or small writes; in an application it means the data is not produced fast enough."
	f.Evidence = []model.Evidence{goodputEvidence(v),
		{What: "samples with nothing unsent while both windows had room", Value: pct(v.idleShare), Source: v.source(model.Sender)}}
	if v.limitedOK {
		f.Evidence = append(f.Evidence, limitedEvidence(v))
	}
	if v.idleSamples > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "in them (median): send queue, in flight, congestion window", Value: fmt.Sprintf("%s, %s, %s",
			v.idleSendQ.Binary(), v.idleFlight.Binary(), v.idleCwnd.Binary()), Source: v.source(model.Sender)})
	}
	f.Fix = []model.Fix{{Where: "application", Kind: "application", Command: "check the sender's CPU (top, mpstat) and how fast it produces data" + largerBlocks(run)}}
	return f
}

// serverCapped: the server held the test to a rate by its limits for
// the client's address (it paces what it sends, and reads no faster than
// the rate, which closes the window on the client's sender). What looks
// like a pacing cap, a full receive window or a slow reader is then the
// server's policy, not the path's or the hosts'.
func serverCapped(v *view, run *model.Run) (model.Finding, bool) {
	// The cap is the test's, shared by all its streams: a direction of
	// a --bidir test has its streams' share.
	all := len(run.Config.Directions())
	if run.ServerRateCap <= 0 || all == 0 || !v.receivedOK {
		return model.Finding{}, false
	}
	c := model.Bitrate(float64(run.ServerRateCap) * float64(min(max(v.streams, 1), all)) / float64(all))
	if float64(v.goodput) < serverCapShare*float64(c) {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "server-rate-cap", Layer: model.LayerApplication, Severity: model.Info, Confidence: model.High}
	f.Summary = fmt.Sprintf("The server's rate cap is the limit: it holds tests from this address to %s, and the transfer got %s.", rate(c), rate(v.goodput))
	f.Explanation = "A public test server may cap each test's rate by the client's network (its limits file): it paces what it sends and reads what it receives no faster, so the test shows the cap, not what the path carries."
	f.Evidence = []model.Evidence{goodputEvidence(v), {What: "the server's cap for these streams (its cap per test, shared by all the test's streams)", Value: rate(c), Source: "server"}}
	f.Fix = []model.Fix{{Where: "server", Kind: "tcpscope", Command: "test against a server without a cap for your address (or ask its operator)"}}
	return f, true
}

// pacingLimited: the sender's pacing cap (SO_MAX_PACING_RATE) is what
// the transfer ran at. The kernel counts paced time as busy, so the
// chrono counters call it congestion-window time.
func pacingLimited(v *view, run *model.Run) model.Finding {
	f := model.Finding{ID: "pacing-limited", Layer: model.LayerApplication, Severity: model.Warning, Confidence: model.High}
	cap := model.Bitrate(float64(v.streams) * float64(v.maxPacing))
	f.Summary = fmt.Sprintf("The sender's pacing cap is the limit: SO_MAX_PACING_RATE allows %s, and the transfer got %s.", rate(cap), rate(v.goodput))
	f.Explanation = "A socket with SO_MAX_PACING_RATE never sends faster than the cap, whatever the path could carry. Applications set it to share a link politely; tcpscope sets it with --fq-rate."
	f.Evidence = []model.Evidence{goodputEvidence(v),
		{What: "pacing cap per stream (SO_MAX_PACING_RATE)", Value: rate(v.maxPacing), Source: v.source(model.Sender)}}
	if run.Config.FQRate > 0 {
		f.Severity = model.Info
		f.Evidence = append(f.Evidence, model.Evidence{What: "asked for with --fq-rate", Value: rate(run.Config.FQRate)})
		f.Fix = []model.Fix{{Where: "application", Kind: "tcpscope", Command: "test without --fq-rate to see what the path carries"}}
	} else {
		f.Fix = []model.Fix{{Where: "application", Kind: "setsockopt", Command: "raise or remove the application's SO_MAX_PACING_RATE"}}
	}
	return f
}

// policer: a rate limit that drops instead of queueing. The rule reads
// the mechanism, not one policer's trace, so the bucket and the rate
// may be anything:
//   - drops without a queue: no queue stood in the measured period (the
//     path not "full") and none stood before the drops either, slow
//     start's included: the highest smoothed round trip stayed within
//     a quarter of the minimum of it (policerQueueShare). A drop-tail
//     bottleneck drops only once its queue is full, and a loss-based
//     sender's slow start fills it first (the 150 ms path's overshoot:
//     148 ms of queue before 1.8% was lost);
//   - clustered loss: a loss-based sender far above the Mathis bound of
//     its retransmitted share (policerOverMathis): random loss that
//     heavy holds reno and cubic near the bound, and only drops that
//     come many to one window reduction leave the rate this far above;
//   - spurious retransmissions excluded: a path that reorders makes a
//     sender retransmit what was not lost, and the receiver's DSACKs say
//     so (half or more of the retransmissions);
//   - a ceiling: the transfer averaged at least deliveredShare of the
//     highest delivery rate the kernel measured (the path never carried
//     much more than the transfer got), or the per-interval rate sat
//     flat under sustained loss, or the loss stopped and the window
//     regrew (a large bucket that slow start outran: the measured
//     seconds are the regrowth, and the delivery samples include the
//     bucket's burst).
//
// Each is weighed on its own, with its margin (docs/DIAGNOSES.md); a
// bottleneck whose queue is far shorter than a window's burst drops the
// same way, and the finding names it too. BBR on a policer detects it
// and paces at the rate; its trace is random loss's, so the rule is for
// loss-based senders.
func policer(v *view, o Options) (model.Finding, bool) {
	if !v.receivedOK || !v.lossOK || v.loss < lossyShare || !lossBased(v) || v.mss <= 0 || v.minRTT <= 0 || pathFull(v) || queueStood(v) {
		return model.Finding{}, false
	}
	if v.retrans > 0 && 2*v.dsack >= v.retrans {
		return model.Finding{}, false // mostly retransmitted for nothing: reordering, not drops
	}
	if v.quietMeasured {
		// No measured interval lost a packet: whatever dropped slow
		// start's overshoot did not shape the measured time, and the
		// window that loss cut regrows as it would behind a drop-tail
		// queue (cubic at 125 ms, 2.8% lost all in slow start, read as
		// a policer the sender had outrun, behind a receive window and
		// a 0.24 BDP queue; reno at 133.5 ms, 0.27%, on a clean path).
		return model.Finding{}, false
	}
	share, known := v.ofDelivery()
	atCeiling := known && share >= deliveredShare
	flat := v.rateSpread > 0 && v.rateSpread <= plateauSpread && v.retransSpread >= sustained
	outrun := v.quietTail >= quietAfter && v.retransSpread < sustained
	if v.loss < policerLoss {
		// Light loss: a large bucket that the sawtooth empties now and
		// then (0.1% lost at 92% of the highest delivery rate through a
		// 265 Mbit/s policer with a 1.16 MB bucket). Random loss on a
		// short test also leaves a loss-free tail, or a flat moment,
		// and cubic on a long path sits above Reno's bound: only the
		// transfer at the path's ceiling (atPathShare of its delivery
		// peak: random loss's sawtooth stays under its peaks, 0.42-0.80
		// in the lab) tells a policer there.
		flat, outrun = false, false
		atCeiling = known && share >= atPathShare
	}
	if !atCeiling && !flat && !outrun {
		return model.Finding{}, false
	}
	bound := mathisBound(v, o)
	if float64(v.goodput) < policerOverMathis*float64(bound) {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "policer", Layer: model.LayerNetwork, Severity: model.Critical, Confidence: model.Medium}
	var ceiling string
	switch {
	case flat:
		ceiling = fmt.Sprintf("the rate sat flat (the largest interval over the smallest, %.2f) under loss in %s of the intervals", v.rateSpread, pct(v.retransSpread))
	case atCeiling:
		ceiling = fmt.Sprintf("the transfer averaged %s of the highest rate the kernel measured delivering (%s): a ceiling", pct(share), rate(v.deliveryMax))
	default:
		ceiling = fmt.Sprintf("the loss stopped for the last %d intervals while the %s window regrew below the rate slow start had outrun", v.quietTail, v.cc)
	}
	f.Summary = fmt.Sprintf("A rate limit that drops instead of queueing holds this transfer at about %s: %.3g%% of the bytes sent were dropped and sent again, yet the rate is %.0f× the %s that random loss that heavy allows, so the drops came clustered above a rate; "+
		"the round trip rose at most %v above its %v minimum, slow start included, so no queue filled before them; and %s. A policer (a token bucket) does this, or a bottleneck whose queue is far shorter than one window's burst.",
		rate(v.goodput), 100*v.loss, float64(v.goodput)/float64(bound), rate(bound), (v.peakRTT - v.minRTT).Round(100*time.Microsecond), v.minRTT.Round(100*time.Microsecond), ceiling)
	f.Explanation = "A policer is a rate limit that drops what exceeds its rate (a token bucket) instead of queueing it, as a shaper or a congested link does. " +
		"A sender above the rate loses bursts of packets with no queue building first, so the round trip does not rise before the losses, and the rate sits at the policed rate while the loss stays high. " +
		"Flach et al. (\"An Internet-Wide Analysis of Traffic Policing\", SIGCOMM 2016) found policing behind a large share of poor transfers: the retransmissions waste capacity and cost a loss-based sender more than a queue would."
	per := model.Bitrate(0.95 * float64(v.goodput) / float64(max(v.streams, 1)))
	f.Evidence = []model.Evidence{
		goodputEvidence(v),
		lossEvidence(v),
		rttEvidence(v),
		{What: "largest over smallest goodput of the measured intervals", Value: fmt.Sprintf("%.2f", v.rateSpread), Source: v.source(model.Receiver)},
		{What: "highest smoothed round trip in any sample, slow start included", Value: v.peakRTT.Round(100 * time.Microsecond).String(), Source: v.source(model.Sender)},
		{What: "share of the measured intervals with retransmissions; the last without, in a row", Value: fmt.Sprintf("%s; %d", pct(v.retransSpread), v.quietTail), Source: v.source(model.Sender)},
		{What: fmt.Sprintf("Mathis bound for that loss, C = %.2f", o.c()), Value: rate(bound)},
		{What: "highest delivery rate the kernel measured", Value: rate(v.deliveryMax), Source: v.source(model.Sender)},
		{What: "congestion control", Value: v.cc, Source: v.source(model.Sender)},
	}
	f.Evidence = append(f.Evidence, lossCostEvidence(v)...)
	f.Fix = []model.Fix{
		{Where: v.senderName(), Kind: "tcpscope", Command: fmt.Sprintf("pace below the policed rate: tcpscope test --fq-rate %s (SO_MAX_PACING_RATE per stream), or tc qdisc replace dev IFACE root fq maxrate %s", per, per)},
		{Where: v.senderName(), Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_congestion_control=bbr (BBR finds a policed rate and paces at it)"},
		{Where: "path", Kind: "tc", Command: "shape at the edge to just below the policed rate (tc qdisc replace dev IFACE root cake bandwidth RATE), so a queue of yours, not the policer, takes the excess; ask the provider for the policed rate and burst"},
	}
	f.Effect = fmt.Sprintf("paced at about %s per stream the drops stop, and the transfer keeps the policed rate without retransmitting %.2g%% of it", per, 100*v.loss)
	f.Predicted = model.Some(v.goodput)
	return f, true
}

// lossLimited: the congestion window held the sender back and the loss
// explains the rate by the Mathis bound.
func lossLimited(v *view, o Options) (model.Finding, bool) {
	// Mathis's bound is a loss-based sender's: BBR does not slow down
	// for loss, and a rate in the bound's band is a coincidence there.
	if v.cc == "bbr" || !v.receivedOK || !v.lossOK || v.loss < lossFloor || v.minRTT <= 0 || v.mss <= 0 {
		return model.Finding{}, false
	}
	// The bound is the average of a sawtooth in its steady state: each
	// stream losing, regrowing, losing again. A stream that lost once in
	// the measured time never completed a cycle, and its rate is where
	// its window was and how fast it regrew, not what the loss allows
	// (two reno streams at 73.5 ms that lost one segment each, 4 s
	// before regrowing to their path, sat at 1.9× the bound).
	//
	// So did one whose only losses in the measured time were slow
	// start's recovery spilling into its first interval: one episode,
	// however many segments it took (reno at 55.6 ms retransmitted 2
	// there, then regrew for 4 s at 93% of its path, and was called
	// loss-limited at 1.5× the bound of those 2 segments).
	//
	// Unless no queue ever stood: then the loss was not the path filling,
	// and the window it cut is what held the rate (cubic at 100 ms with
	// 0.1% loss lost once in 4 s at 3.83 Mbit/s of a 100 Mbit/s path,
	// its round trip at its minimum throughout, and was called the
	// path's bottleneck).
	if (v.retrans < uint32(2*max(v.streams, 1)) || v.spillOnly) && v.rtoShare() < rtoShare && queueStood(v) {
		return model.Finding{}, false
	}
	c := o.c()
	bound := mathisBound(v, o)
	ratio := float64(v.goodput) / float64(bound)
	// Loss in bursts costs a loss-based sender one window reduction, or a
	// timeout, for many lost packets: the rate sits above the bound the
	// retransmitted share gives, and the timeouts show where it went.
	bursty := v.rtoShare() >= rtoShare
	if ratio < 1/mathisBand || (ratio > mathisBand && !bursty) {
		// Above: loss was there but did not set the rate (BBR, or loss
		// only in slow start). Below: something else held the rate far
		// under what this loss allows.
		return model.Finding{}, false
	}
	f := model.Finding{ID: "loss-limited", Layer: model.LayerNetwork, Severity: model.Critical, Confidence: model.High}
	if ratio < 0.5 || ratio > 2 {
		f.Confidence = model.Medium
	}
	f.Summary = fmt.Sprintf("Packet loss limits this transfer: %.3g%% of the bytes sent were retransmitted, and the Mathis bound at %v is %s; it got %s.",
		100*v.loss, v.minRTT.Round(time.Microsecond), rate(bound), rate(v.goodput))
	if ratio > mathisBand {
		f.Summary = fmt.Sprintf("Packet loss in bursts limits this transfer: %.3g%% of the bytes sent were retransmitted and the sender spent %s of the time in retransmission timeouts; it got %s.",
			100*v.loss, pct(v.rtoShare()), rate(v.goodput))
	}
	f.Explanation = "A loss-based congestion control (reno, cubic) halves its window at every loss, so with loss probability p a flow averages at most C·MSS/(RTT·√p) (Mathis et al.). " +
		"The longer the path, the less loss it takes. Find where packets are lost: a bad cable or optic, a duplex mismatch, a full queue on the path."
	f.Evidence = []model.Evidence{
		goodputEvidence(v),
		lossEvidence(v),
		rttEvidence(v),
		{What: "MSS", Value: v.mss.Decimal(), Source: v.source(model.Sender)},
		{What: fmt.Sprintf("Mathis bound, C = %.2f", c), Value: rate(bound)},
	}
	if v.limitedOK {
		f.Evidence = append(f.Evidence, limitedEvidence(v))
	}
	if v.cc != "" {
		f.Evidence = append(f.Evidence, model.Evidence{What: "congestion control", Value: v.cc, Source: v.source(model.Sender)})
	}
	per := model.Bitrate(float64(v.goodput) / float64(max(v.streams, 1)))
	f.Fix = []model.Fix{
		{Where: "path", Kind: "ethtool", Command: "on each host and router interface along the path: ethtool -S IFACE | grep -iE 'err|drop|crc'; ip -s link show IFACE"},
		{Where: "path", Kind: "ethtool", Command: "ethtool IFACE: both ends of every link at the same speed and full duplex"},
		// A policer whose bucket is a few packets drops every burst, at
		// random as far as the ends can see; paced, its drops stop.
		{Where: v.senderName(), Kind: "tcpscope", Command: fmt.Sprintf("tcpscope test --fq-rate %s (paced at the rate it got): if the loss stops, a policer with a small bucket is dropping the sender's bursts; random loss does not care", per)},
	}
	if v.cc != "bbr" {
		f.Fix = append(f.Fix, model.Fix{Where: v.senderName(), Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_congestion_control=bbr (does not read random loss as congestion)"})
	}
	if o.Target > 0 {
		need := tcpmath.MathisLoss(model.Bitrate(float64(o.Target)/float64(max(v.streams, 1))), v.mss, v.minRTT, c)
		f.Effect = fmt.Sprintf("to reach %s at this RTT and MSS the loss must fall below %.2g%% (now %.3g%%)", rate(o.Target), 100*need, 100*v.loss)
		f.Predicted = model.Some(o.Target)
	} else {
		f.Effect = fmt.Sprintf("every halving of the loss rate raises the bound by √2; at a tenth of today's loss it is %s",
			rate(model.Bitrate(float64(bound)*math.Sqrt(10))))
	}
	return f, true
}

// bottleneckExplanation says what "the path is the limit" means here.
func bottleneckExplanation(v *view) string {
	if v.local {
		return "Both ends are on this host: no network lies between them, and the rate is what the CPUs the two applications share copy through the kernel."
	}
	return "The sender was limited by its congestion window, which follows what the path delivers, not by a buffer or the application."
}

// bottleneck: nothing in the hosts held the sender back and loss does
// not explain the rate: the path is the limit. Healthy, unless the
// verdict finds it costs something else.
func bottleneck(v *view, o Options) model.Finding {
	f := model.Finding{ID: "bottleneck", Layer: model.LayerNetwork, Severity: model.Info, Confidence: model.Medium}
	f.Summary = fmt.Sprintf("The path's bottleneck is the limit: %s, with the hosts not holding the sender back.", rate(v.goodput))
	f.Explanation = bottleneckExplanation(v) + " This is how a healthy transfer looks."
	if v.local {
		f.Layer = model.LayerHost
		f.Summary = fmt.Sprintf("There is no path: both ends are on this host, and %s is what it moves between them, with neither buffer nor application holding the sender back.", rate(v.goodput))
	}
	f.Evidence = []model.Evidence{goodputEvidence(v), rttEvidence(v)}
	if !v.receivedOK {
		f.Summary = "Nothing in the sender held it back; what the path delivered is not known: the receiver's report is missing, and the sender's kernel did not say what was acknowledged."
		f.Evidence = []model.Evidence{rttEvidence(v)}
	}
	if v.limitedOK {
		f.Evidence = append(f.Evidence, limitedEvidence(v))
		if v.limited.Cwnd >= limitedShare {
			f.Confidence = model.High
		}
	}
	if v.deliveryMax > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "highest delivery rate the kernel measured", Value: rate(v.deliveryMax), Source: v.source(model.Sender)})
	}
	if o.Target > 0 && v.receivedOK && float64(v.goodput) < 0.8*float64(o.Target) {
		f.Severity = model.Warning
		f.Summary = fmt.Sprintf("The path delivers %s, below the %s target, and the hosts are not what holds it back.", rate(v.goodput), rate(o.Target))
		f.Explanation = bottleneckExplanation(v) + " The target is not met: the bottleneck is slower than expected, or shared with other traffic."
		f.Fix = []model.Fix{{Where: "path", Kind: "tcpscope", Command: "test at different times of day (cross traffic), and with -P 4 (a shared bottleneck gives more streams more)"}}
	}
	return f
}

// receiverOnly is the verdict from the receiver's end alone: the
// sender's kernel was not read (a stock iperf3 sender, seen by tcpscope
// as client or server). What only the sender knows (its windows, its
// buffer, its loss and RTT, its idle time) is not guessed: the rules
// that need it stay silent, and the verdict says what the receiver saw.
func receiverOnly(v *view, run *model.Run, o Options) model.Finding {
	if f, ok := stalledAtReceiver(v, run); ok {
		return f
	}
	if f, ok := stoppedAtReceiver(v, run); ok {
		return f
	}
	if f, ok := appLimit(v, run); ok {
		return f
	}
	if !v.rcvKernel {
		return notJudged(v, run)
	}
	if slowReadingReceiver(v) {
		return slowReader(v)
	}
	if v.optsOK && !v.opts.WindowScaling && v.rcvRTT > 0 && v.receivedOK {
		if bound := tcpmath.WindowRate(fullWindow64K, v.rcvRTT); float64(v.goodput) >= nearWindow*float64(max(v.streams, 1))*float64(bound) {
			f := model.Finding{ID: "wscale-off", Layer: model.LayerTransport, Severity: model.Critical, Confidence: model.Medium}
			f.Summary = fmt.Sprintf("Window scaling is off, so the receiver can offer at most 64 KiB: %s at the receiver's RTT estimate of %v, and the transfer got %s. Seen from the receiver's end only.",
				rate(bound), v.rcvRTT.Round(time.Microsecond), rate(v.goodput))
			f.Explanation = wscaleExplanation
			f.Evidence = []model.Evidence{goodputEvidence(v),
				{What: "window scaling negotiated", Value: "no", Source: v.source(model.Receiver)},
				{What: "receiver's RTT estimate (rcv_rtt, median)", Value: v.rcvRTT.Round(time.Microsecond).String(), Source: v.source(model.Receiver)}}
			f.Fix = wscaleFix()
			return f
		}
	}
	return senderUnknown(v)
}

// senderUnknown: the receiver kept up, and only the sender's kernel could
// say what held it back.
func senderUnknown(v *view) model.Finding {
	f := model.Finding{ID: "sender-unknown", Layer: model.LayerTransport, Severity: model.Info, Confidence: model.Low}
	got := "what arrived is not known"
	if v.receivedOK {
		got = rate(v.goodput) + " arrived"
	}
	f.Summary = fmt.Sprintf("Seen from the receiver only: %s and the receiver kept up; what held the sender back (the path, its buffer or its application) only its kernel can say, and it was not read.", got)
	f.Explanation = "The sending end is stock iperf3, which reports its byte counts but not its kernel's TCP state: its congestion window, round trip, losses and the time it spent waiting. The receiver's end shows only that it was not the limit."
	if v.receivedOK {
		f.Evidence = append(f.Evidence, goodputEvidence(v))
	}
	if v.rcvWndOK {
		f.Evidence = append(f.Evidence, model.Evidence{What: "window the receiver advertised, median and largest", Value: fmt.Sprintf("%s, %s", v.rcvWndMedian.Binary(), v.rcvWndMax.Binary()), Source: v.source(model.Receiver)})
	}
	if v.recvQOK {
		f.Evidence = append(f.Evidence, model.Evidence{What: "bytes received and not yet read by the application (median)", Value: v.medianRecvQ.Binary(), Source: v.source(model.Receiver)})
	}
	if v.rcvRTT > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "receiver's RTT estimate (rcv_rtt, median)", Value: v.rcvRTT.Round(time.Microsecond).String(), Source: v.source(model.Receiver)})
	}
	if n, ok := v.sum.RetransSegs.Get(); ok {
		f.Evidence = append(f.Evidence, model.Evidence{What: "segments the sender retransmitted (its own report)", Value: fmt.Sprint(n), Source: v.source(model.Sender)})
	}
	f.Fix = []model.Fix{{Where: "application", Kind: "tcpscope", Command: "run tcpscope at the sending end too (tcpscope server there, or tcpscope test from it) to see its kernel"}}
	return f
}

// notJudged: neither end's kernel was read (an iperf3 -J document): the
// bytes say what arrived and nothing of what held the sender back. It
// says so and shows what the result does hold, never "healthy".
func notJudged(v *view, run *model.Run) model.Finding {
	f := model.Finding{ID: "not-judged", Layer: model.LayerTransport, Severity: model.Info, Confidence: model.Low}
	why := "what held the sender back (the path, loss, a window, a buffer or an application) cannot be told"
	f.Summary = "Not judged: neither what arrived nor either end's kernel TCP state is in this result, so " + why + "."
	if v.receivedOK {
		f.Summary = fmt.Sprintf("Not judged: %s arrived, but neither end's kernel TCP state is in this result, so %s.", rate(v.goodput), why)
		f.Evidence = append(f.Evidence, goodputEvidence(v))
	}
	f.Explanation = "tcpscope's rules compare the two kernels' accounts of each connection: the receiver's window and unread bytes, the sender's limited-by times, minimum RTT, losses in bytes and delivery rate. A result without them, such as iperf3's -J, shows the rate but not its cause."
	if n, ok := v.sum.RetransSegs.Get(); ok {
		f.Evidence = append(f.Evidence, model.Evidence{What: "segments the sender retransmitted (its own report)", Value: fmt.Sprint(n), Source: v.source(model.Sender)})
	}
	snd := &run.Client
	if v.sender == model.ServerSide {
		snd = &run.Remote
	}
	ids := run.StreamIDs(v.dir)
	var cwnd, wnd model.Bytes
	var peakRTT time.Duration
	for _, t := range snd.Totals {
		if t.Role == model.Sender && ids[t.Stream] {
			cwnd, wnd, peakRTT = max(cwnd, t.MaxCwnd.V), max(wnd, t.MaxSndWnd.V), max(peakRTT, t.MaxRTT.V)
		}
	}
	if cwnd > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "largest congestion window (a stream's)", Value: cwnd.Binary(), Source: v.source(model.Sender)})
	}
	if wnd > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "largest window the receiver advertised (a stream's)", Value: wnd.Binary(), Source: v.source(model.Sender)})
	}
	if m, ok := v.sum.MeanRTT.Get(); ok && peakRTT > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "smoothed RTT at the end, and the highest", Value: fmt.Sprintf("%v, %v", m.Round(time.Microsecond), peakRTT.Round(time.Microsecond)), Source: v.source(model.Sender)})
	} else if ok {
		f.Evidence = append(f.Evidence, model.Evidence{What: "smoothed RTT at the end", Value: m.Round(time.Microsecond).String(), Source: v.source(model.Sender)})
	}
	if c, s := run.Client.CPU, run.Remote.CPU; c != nil && s != nil {
		f.Evidence = append(f.Evidence, model.Evidence{What: "CPU use of the client and the server (user+system, of one CPU)", Value: fmt.Sprintf("%.1f%%, %.1f%%", c.Total, s.Total)})
	}
	f.Fix = []model.Fix{{Where: "both ends", Kind: "tcpscope", Command: "run the test with tcpscope (tcpscope server at the far end, or tcpscope test against its stock iperf3 server) to read the kernels"}}
	return f
}

// stalledAtReceiver is stalled seen from the receiver alone (the sender's
// report never came): a memory-to-memory test whose receiver got almost
// nothing, and never a full-size segment: the largest that arrived
// (rcv_mss) stayed below the segment size it advertised. A sender held
// to a rate (-b) that got near it sent little because it was asked to,
// in small writes: every paced test at a server's end looked stalled.
func stalledAtReceiver(v *view, run *model.Run) (model.Finding, bool) {
	if !v.test || !v.receivedOK || v.received >= stalledBytes {
		return model.Finding{}, false
	}
	if asked := float64(run.Config.Bitrate) * float64(max(v.streams, 1)); asked > 0 && float64(v.goodput) >= pacedShare*asked {
		return model.Finding{}, false
	}
	if v.rcvMSS <= 0 || v.advMSS <= 0 || v.rcvMSS >= v.advMSS {
		if v.received == 0 {
			// Nothing arrived at all: not even the segment sizes tell the
			// cause, but a transfer that moved nothing is never "kept up".
			f := model.Finding{ID: "pmtu-blackhole", Layer: model.LayerNetwork, Severity: model.Critical, Confidence: model.Low}
			f.Summary = "The connection opened but no data arrived, and the sender's report never came: the path drops what the data connection sends. A path-MTU black hole does this (the handshake's small packets cross, full-size ones do not); so does a path that loses everything for long stretches. Seen from the receiver only."
			f.Explanation = stalledExplanation
			f.Evidence = []model.Evidence{{What: "bytes received", Value: "0 B", Source: v.source(model.Receiver)}}
			f.Fix = stalledFix(v)
			return f, true
		}
		return model.Finding{}, false
	}
	f := model.Finding{ID: "pmtu-blackhole", Layer: model.LayerNetwork, Severity: model.Critical, Confidence: model.Medium}
	f.Summary = fmt.Sprintf("The connection opened but only %s arrived, and no full-size segment among it: the largest was %s where %s were expected. Full-size packets are being dropped; suspect a path-MTU black hole. Seen from the receiver only: the sender's report never came.",
		v.received.Decimal(), v.rcvMSS.Decimal(), v.advMSS.Decimal())
	f.Explanation = stalledExplanation
	f.Evidence = []model.Evidence{
		{What: "bytes received", Value: v.received.Decimal(), Source: v.source(model.Receiver)},
		{What: "largest segment the receiver saw (rcv_mss), and the MSS it advertised", Value: fmt.Sprintf("%s, %s", v.rcvMSS.Decimal(), v.advMSS.Decimal()), Source: v.source(model.Receiver)},
	}
	f.Fix = stalledFix(v)
	return f, true
}

// stoppedAtReceiver: seen from the receiver alone (the sender's report
// never came), data arrived and then stopped: in a memory-to-memory test
// not paced by -b, nothing came for rtoQuiet or more at the end of the
// receiver's account. Only a sender backing off through retransmission
// timeouts goes that quiet (200 ms, then 400, 800...), so the finding is
// rto-stalls, at low confidence. A download through bursts of loss
// counted in packets (a stalled sender's few never ended the burst)
// arrived at 227, 221, 164 and 110 Mbit/s, then nothing for 11 s, and
// was sender-unknown, "the receiver kept up".
func stoppedAtReceiver(v *view, run *model.Run) (model.Finding, bool) {
	if !v.test || !v.receivedOK || v.received == 0 || run.Config.Bitrate != 0 || v.rcvQuiet < rtoQuiet {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "rto-stalls", Layer: model.LayerTransport, Severity: model.Critical, Confidence: model.Low}
	f.Summary = fmt.Sprintf("The transfer stopped: %s arrived, then nothing for the last %v the receiver accounted, and the sender's report never came. Only a sender backing off through retransmission timeouts goes that quiet: the path stopped carrying its packets (a long outage, bursts of loss, a route that changed into a black hole). Seen from the receiver only.",
		v.received.Decimal(), v.rcvQuiet.Round(100*time.Millisecond))
	f.Explanation = "After a timeout a sender waits at least 200 ms and doubles the wait at each further one; nothing reaches the receiver meanwhile. Seconds of silence are several timeouts in a row: the path lost every retransmission."
	f.Evidence = []model.Evidence{
		{What: "bytes received", Value: v.received.Decimal(), Source: v.source(model.Receiver)},
		{What: "time at the end with nothing arriving", Value: v.rcvQuiet.Round(100 * time.Millisecond).String(), Source: v.source(model.Receiver)},
	}
	f.Fix = []model.Fix{{Where: "path", Kind: "ethtool", Command: "look for an outage or bursts of loss on the path (ethtool -S IFACE, the routers' logs), and run tcpscope at the sending end to read its timeouts"}}
	return f, true
}

const stalledExplanation = "The handshake's small packets got through but full-size segments did not, and no ICMP \"fragmentation needed\" came back to lower the sender's MSS. " +
	"A link with a smaller MTU whose router's ICMP is filtered does this. Long bursts of loss can stall a transfer the same way: if small transfers to the same host also stall, it is loss, not the MTU."

func stalledFix(v *view) []model.Fix {
	return []model.Fix{
		{Where: v.senderName(), Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_mtu_probing=1 (find the working size after a timeout)"},
		{Where: "path", Kind: "firewall", Command: "let ICMP type 3 code 4 (IPv6: type 2) through the firewalls on the path"},
		{Where: v.senderName(), Kind: "ip", Command: "or lower the MTU: ip link set dev IFACE mtu 1400"},
	}
}

// stalled: the connection opened but (almost) nothing got through: no
// byte arrived, or the sender spent most of the test in back-to-back
// retransmission timeouts. Small packets (the handshake, ACKs) crossed
// and full-size ones did not: a path-MTU black hole is the usual cause.
// What arrived must be known (from the receiver, or from what the
// sender's kernel saw acknowledged); an unknown amount is not zero.
func stalled(v *view) (model.Finding, bool) {
	if !v.sndKernel {
		return model.Finding{}, false
	}
	none := v.receivedOK && v.received == 0 && (v.rtos > 0 || v.retrans > 0)
	stuck := v.rtos >= 3 && v.life > 0 && v.rtoTime*2 >= v.life && (!v.receivedOK || v.received < stalledBytes)
	// The kernel raises the receiver's rcv_mss to the largest segment
	// that arrived: full-size segments crossed, so what stalled the
	// sender was loss (long bursts of it), not the MTU.
	fullSize := v.rcvMSS > 0 && v.mss > 0 && v.rcvMSS >= v.mss
	if (!none && !stuck) || fullSize {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "pmtu-blackhole", Layer: model.LayerNetwork, Severity: model.Critical, Confidence: model.Medium}
	got := "no data arrived"
	switch {
	case !v.receivedOK:
		got = "what arrived is not known (the receiver's report is missing)"
		f.Confidence = model.Low
	case !none:
		got = fmt.Sprintf("only %s arrived", v.received.Decimal())
	}
	f.Summary = fmt.Sprintf("The connection opened but %s: the sender backed off through %d retransmission timeouts (%v). Full-size packets are being dropped; suspect a path-MTU black hole.",
		got, v.rtos, v.rtoTime.Round(100*time.Millisecond))
	f.Explanation = stalledExplanation
	received := model.Evidence{What: "bytes received", Value: v.received.Decimal(), Source: v.source(model.Receiver)}
	if v.fromAcks {
		received = model.Evidence{What: "bytes received (acknowledged: the receiver's report is missing)", Value: v.received.Decimal(), Source: v.source(model.Sender)}
	}
	f.Evidence = []model.Evidence{
		{What: "time in retransmission timeouts", Value: v.rtoTime.Round(time.Millisecond).String(), Source: v.source(model.Sender)},
		{What: "retransmission timeouts", Value: fmt.Sprint(v.rtos), Source: v.source(model.Sender)},
		{What: "sender's MSS and path MTU", Value: fmt.Sprintf("%d B, %d B", v.mss, v.pmtu), Source: v.source(model.Sender)},
	}
	if v.receivedOK {
		f.Evidence = append([]model.Evidence{received}, f.Evidence...)
	}
	if v.rcvMSS > 0 {
		f.Confidence = model.High // no full-size segment arrived: the receiver's own count says so
		f.Evidence = append(f.Evidence, model.Evidence{What: "largest segment the receiver saw (rcv_mss)", Value: v.rcvMSS.Decimal(), Source: v.source(model.Receiver)})
	}
	f.Fix = stalledFix(v)
	return f, true
}
