package diagnose

import (
	"fmt"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// The findings beside the limit: what else a direction costs or is worth
// knowing. Each needs the end whose kernel shows it, and stays silent
// when that end was not read.

func bufferbloat(v *view, lim limitSet) (model.Finding, bool) {
	added := v.srtt - v.minRTT
	// A receiver that stops reading delays its window updates, and the
	// RTT samples with them: no queue on the path.
	if !v.sndKernel || lim["slow-reader"] || v.minRTT <= 0 || added < bloatAdded || float64(added) < bloatRatio*float64(v.minRTT) {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "bufferbloat", Layer: model.LayerNetwork, Severity: model.Warning, Confidence: model.High}
	f.Summary = fmt.Sprintf("A queue on the path adds %v under load: the round trip went from %v to %v.",
		added.Round(time.Millisecond), v.minRTT.Round(100*time.Microsecond), v.srtt.Round(100*time.Microsecond))
	f.Explanation = "The bottleneck's buffer fills before it drops anything, so every packet waits behind the queue. Throughput does not gain from it; interactive traffic sharing the path suffers."
	f.Evidence = []model.Evidence{rttEvidence(v)}
	f.Fix = []model.Fix{
		{Where: "path", Kind: "tc", Command: "on the bottleneck router: tc qdisc replace dev IFACE root fq_codel (or cake bandwidth RATE)"},
		{Where: v.senderName(), Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_congestion_control=bbr (keeps the queue short)"},
	}
	f.Effect = fmt.Sprintf("with an AQM the round trip under load stays within a few ms of %v", v.minRTT.Round(100*time.Microsecond))
	return f, true
}

func sackOff(v *view, lim limitSet) (model.Finding, bool) {
	if !v.optsOK || v.opts.SACK {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "sack-off", Layer: model.LayerTransport, Severity: model.Warning, Confidence: model.High}
	if lim["loss-limited"] || lim["policer"] {
		f.Severity = model.Critical
	}
	f.Summary = "Selective acknowledgments (SACK) are off: after a loss the sender learns of one missing segment per round trip."
	f.Explanation = "With SACK (RFC 2018) the receiver reports every block it holds, so several losses in a window are repaired in one round trip. Without it a loss burst costs a round trip per segment, or a timeout."
	f.Evidence = []model.Evidence{{What: "SACK negotiated", Value: "no", Source: v.optsSource()}}
	f.Fix = []model.Fix{{Where: "both ends", Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_sack=1"}}
	return f, true
}

func timestampsOff(v *view, lim limitSet) (model.Finding, bool) {
	if !v.optsOK || v.opts.Timestamps {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "timestamps-off", Layer: model.LayerTransport, Severity: model.Info, Confidence: model.High}
	f.Summary = "TCP timestamps are off: RTT is measured once per window, and wrapped sequence numbers are not guarded on fast paths."
	f.Explanation = "Timestamps (RFC 7323) give an RTT sample with every ACK and protect against wrapped sequence numbers (PAWS), which a 10 Gbit/s flow wraps in under 4 s."
	f.Evidence = []model.Evidence{{What: "timestamps negotiated", Value: "no", Source: v.optsSource()}}
	f.Fix = []model.Fix{{Where: "both ends", Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_timestamps=1"}}
	return f, true
}

// optsSource is the end whose kernel showed the negotiated options.
func (v *view) optsSource() string {
	if v.sndKernel {
		return v.source(model.Sender)
	}
	return v.source(model.Receiver)
}

func smallMSSRule(v *view, lim limitSet) (model.Finding, bool) {
	// Without the sender's kernel the MSS is the largest segment the
	// receiver saw, which says so only once data flowed.
	if v.mss == 0 || v.mss >= smallMSS || (v.pmtu > 0 && v.pmtu < 1280) || (!v.sndKernel && (!v.receivedOK || v.received < stalledBytes)) {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "small-mss", Layer: model.LayerNetwork, Severity: model.Warning, Confidence: model.High}
	full := model.Bytes(1448)
	if v.pmtu > 0 {
		full = v.pmtu - 52 // IPv4 and TCP headers with timestamps
	}
	f.Summary = fmt.Sprintf("Segments carry only %d bytes where the path MTU allows about %d: every per-packet cost, and the loss bound, is %.1f× worse.",
		v.mss, full, float64(full)/float64(v.mss))
	f.Explanation = "The MSS is set by the smaller of what the receiver advertises and the path MTU. A small value comes from an MSS clamp on a middlebox, a route's advmss, or the application's TCP_MAXSEG. The Mathis bound grows linearly with the MSS."
	f.Evidence = []model.Evidence{
		{What: "sender's MSS", Value: v.mss.Decimal(), Source: v.optsSource()},
		{What: "path MTU", Value: v.pmtu.Decimal(), Source: v.optsSource()},
	}
	if v.advMSS > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "receiver's advertised MSS", Value: v.advMSS.Decimal(), Source: v.source(model.Receiver)})
	}
	f.Fix = []model.Fix{
		{Where: "both ends", Kind: "ip", Command: "ip route show (an advmss on the route clamps it); iptables -t mangle -S | grep TCPMSS"},
		{Where: "application", Kind: "setsockopt", Command: "do not set TCP_MAXSEG (tcpscope test without -M)"},
	}
	if lim["loss-limited"] {
		f.Severity = model.Critical
		f.Effect = fmt.Sprintf("at %d bytes the loss bound is %.1f× higher", full, float64(full)/float64(v.mss))
	}
	return f, true
}

func rtoStalls(v *view, lim limitSet) (model.Finding, bool) {
	if !v.sndKernel || v.rtos == 0 || v.life <= 0 {
		return model.Finding{}, false
	}
	// Three timeouts are a pattern in one stream, not in eight: each
	// stream's stall leaves the others to fill the path (eight cubic
	// streams on a 0.25 BDP queue timed out 3 times among them, 4% of
	// their time, at 97% of the path).
	share := v.rtoShare()
	if share < heavyRTOShare && v.rtos < uint32(3*max(v.rtoStreams, 1)) {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "rto-stalls", Layer: model.LayerTransport, Severity: model.Warning, Confidence: model.High}
	if share >= rtoShare {
		f.Severity = model.Critical
	}
	f.Summary = fmt.Sprintf("The sender stalled on %d retransmission timeouts, %v in all (%s of the test).", v.rtos, v.rtoTime.Round(time.Millisecond), pct(share))
	f.Explanation = "A timeout means the sender heard nothing for a whole RTO (at least 200 ms on Linux) and restarts from one segment. It happens when a whole window is lost, or too few segments follow a loss to trigger fast retransmit."
	f.Evidence = []model.Evidence{
		{What: "retransmission timeouts", Value: fmt.Sprint(v.rtos), Source: v.source(model.Sender)},
		{What: "time recovering from them", Value: v.rtoTime.Round(time.Millisecond).String(), Source: v.source(model.Sender)},
	}
	f.Fix = []model.Fix{{Where: "path", Kind: "ethtool", Command: "look for bursts of loss: ethtool -S IFACE, and a queue too short for the path's BDP"}}
	if v.optsOK && !v.opts.SACK {
		f.Fix = append(f.Fix, model.Fix{Where: "both ends", Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_sack=1"})
	}
	return f, true
}

// reordering: packets overtook each other on the path. Over loopback
// there is no path: what the kernel counts there is the host's own (GRO,
// several receive queues) and nothing on a network could be changed, so
// the rule stays silent.
func reordering(v *view, lim limitSet) (model.Finding, bool) {
	// The kernel counts reordering once per ACK that reveals it, so its
	// share is of the ACKs the sender received: at 614 Mbit/s a receiver
	// acknowledges several segments at once (GRO, stretch ACKs), and the
	// share of the segments sent read 0.014% on a path reordering 0.5% of
	// its packets. The segments stand in when the ACKs were not counted.
	of := v.acksIn
	if of == 0 {
		of = v.segsOut
	}
	if !v.sndKernel || v.local || v.reordSeen < minReorderings ||
		(of > 0 && float64(v.reordSeen) < reorderShare*float64(of)) {
		return model.Finding{}, false
	}
	// Reordering costs a sender when it retransmits for nothing (DSACKs
	// count those) and cuts its window with them: a warning, since per
	// packet load balancing behind it can be fixed. Linux's RACK waits a
	// quarter of a round trip before it calls a hole lost, so most
	// reordering costs nothing, and is then a property of the path.
	f := model.Finding{ID: "reordering", Layer: model.LayerNetwork, Severity: model.Info, Confidence: model.Medium}
	if v.dsack >= minReorderings && (v.segsOut == 0 || float64(v.dsack) >= reorderShare*float64(v.segsOut)) {
		f.Severity = model.Warning
	}
	if of > 0 {
		f.Confidence = model.High
	}
	f.Summary = fmt.Sprintf("The path reorders packets: the sender saw %d reorderings and now tolerates %d segments out of order.", v.reordSeen, v.reordering)
	if f.Severity == model.Info {
		f.Summary += fmt.Sprintf(" DSACKs report %d segments retransmitted for nothing: the sender absorbed it.", v.dsack)
	}
	f.Explanation = "Packets overtaking each other (parallel links, load balancing per packet, some wireless) look like loss to a sender that counts duplicate ACKs. Linux adapts its threshold and uses RACK, but early retransmissions cost rate; DSACKs show the ones that were spurious."
	f.Evidence = []model.Evidence{
		{What: "reordering events seen", Value: fmt.Sprint(v.reordSeen), Source: v.source(model.Sender)},
		{What: "reordering degree (segments)", Value: fmt.Sprint(v.reordering), Source: v.source(model.Sender)},
		{What: "spurious retransmissions reported by DSACK", Value: fmt.Sprint(v.dsack), Source: v.source(model.Sender)},
	}
	if v.segsOut > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "data segments sent", Value: fmt.Sprint(v.segsOut), Source: v.source(model.Sender)})
	}
	if v.acksIn > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "segments (ACKs) received", Value: fmt.Sprint(v.acksIn), Source: v.source(model.Sender)})
	}
	f.Fix = []model.Fix{{Where: "path", Kind: "ip", Command: "find per-packet load balancing (ECMP or bonding in round-robin mode) on the path"}}
	return f, true
}

func zeroWindow(v *view, lim limitSet) (model.Finding, bool) {
	if !v.sndKernel || v.samples == 0 || v.zeroWindows < minZeroWindows || float64(v.zeroWindows) < zeroWindowShare*float64(v.samples) {
		return model.Finding{}, false
	}
	if lim["server-rate-cap"] {
		// The server read no faster than its cap: a window it closed
		// on purpose.
		return model.Finding{}, false
	}
	f := model.Finding{ID: "zero-window", Layer: model.LayerApplication, Severity: model.Warning, Confidence: model.High}
	if lim["rwnd-limited"] || lim["slow-reader"] {
		f.Severity = model.Critical
	}
	f.Summary = fmt.Sprintf("The receiving application fell behind: its window was closed in %d of %d samples.", v.zeroWindows, v.samples)
	f.Explanation = "A closed window (zero, or the one scale unit Linux still advertises) means the receiver's buffer is full because the application is not reading; the sender then waits, probing. A bigger buffer only postpones it."
	f.Evidence = []model.Evidence{{What: "samples with a closed window (under two segments)", Value: fmt.Sprintf("%d of %d", v.zeroWindows, v.samples), Source: v.source(model.Sender)}}
	f.Fix = []model.Fix{{Where: "application", Kind: "application", Command: "make the receiver read faster: larger reads, less work per read, a faster disk behind it; check its CPU"}}
	return f, true
}

// bbrOverflow: BBR's own congestion loss, not the path's. BBR ignores
// loss, so on a drop-tail queue of about one BDP its bandwidth probes
// overflow the queue it built: drops come with some probes and not
// others, and a whole measured interval can pass with almost none (a
// clean 100 Mbit/s, 10 ms path: 24, 1, 59, 30, 6 per second). Random
// loss is a Poisson process over the segments sent: with a median of
// poissonMedian or more per interval, an interval with under
// 1/poissonLow of it is all but impossible (the lab's 0.3% loss under
// BBR at 40 ms: 20 to 30 in every second).
func bbrOverflow(v *view) bool {
	return v.cc == "bbr" && pathFull(v) && v.retransMedian >= poissonMedian &&
		v.retransLow*poissonLow < v.retransMedian
}

// lossyPath: loss that did not set the rate (BBR rode over it, or a
// loss-based sender met it in bursts) is still worth knowing when it
// would cost a loss-based sender: its Mathis bound is below the rate
// this transfer got. Loss whose bound is above the rate costs nothing
// (loopback's few drops in the host's own queues, at a bound of Tbit/s):
// over loopback it is information about the host.
//
// Heavy loss (heavy: 1% of the bytes, or 5% of the life in timeouts) is
// never silent: when no other finding of the direction names it at
// warning severity or more, this one does, whatever the exclusions
// below, with what the loss cost.
func lossyPath(v *view, lim limitSet, o Options) (model.Finding, bool) {
	if lim["loss-limited"] || lim["policer"] || lim["pmtu-blackhole"] || !v.sndKernel || !v.lossOK || v.loss < lossyShare || v.mss == 0 || v.minRTT <= 0 {
		return model.Finding{}, false
	}
	loud := heavy(v) && v.loss >= heavyLoss
	if v.local {
		return localLoss(v, loud), true
	}
	// A loss-based sender fills the bottleneck's queue until it drops:
	// with the queue built up, its losses are how it finds the rate, not
	// a cost. And a lossy path loses all along: retransmissions in only
	// one or two intervals are one episode (slow start overshooting a
	// long path's queue, one outage). BBR overflowing the queue its own
	// probes built is its probing, not the path. None of it silences
	// heavy loss.
	episode := (v.retransSpread > 0 && v.retransSpread < sustained) || v.quietMeasured
	bound := mathisBound(v, o)
	if !loud && ((v.cc != "bbr" && pathFull(v)) || episode || bbrOverflow(v) || queueOverflow(v, bound) || bound >= v.goodput) {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "lossy-path", Layer: model.LayerNetwork, Severity: model.Warning, Confidence: model.Medium}
	cause := "random loss on the path (errors, a policer, a congested link elsewhere)"
	ownQueue := v.cc == "bbr" && (pathFull(v) || queueRose(v))
	rise := (v.srtt - v.minRTT).Round(100 * time.Microsecond)
	if !pathFull(v) {
		rise = (v.peakRTT - v.minRTT).Round(100 * time.Microsecond) // the queue stood at moments
	}
	switch {
	case ownQueue:
		// BBR (v1) keeps up to two BDPs in flight whatever it loses, so a
		// drop-tail queue shorter than that overflows steadily under it:
		// 7% retransmitted at 920 Mbit/s on a clean LAN with 2 ms of
		// queue. From the sender that looks like random loss; only a
		// loss-based sender on the same path tells them apart, so under
		// heavyLoss it is information, not a warning about the path.
		if !loud {
			f.Severity, f.Confidence = model.Info, model.Low
		}
		cause = fmt.Sprintf("bbr overflowing the queue it built (the RTT rose by up to %v under load), or loss on the path; from the sender the two look alike, and a test with -C cubic tells them apart", rise)
	case lossBased(v) && episode && queueStood(v):
		cause = fmt.Sprintf("one episode, in %s of the measured intervals, after the round trip had risen %v above its minimum: slow start overshooting the path's queue, which filled before it dropped", pct(v.retransSpread), (v.peakRTT - v.minRTT).Round(time.Millisecond))
	case pathFull(v):
		// A queue built up, so some or all of it may be the queue
		// overflowing; the endpoints cannot tell the two apart.
		cause = fmt.Sprintf("the bottleneck's queue overflowing (the RTT rose by %v under load), or errors on the path", rise)
	case v.loss >= policerLoss && v.cc == "bbr":
		// BBR on a policer paces at the policed rate and looks like BBR
		// over random loss; a loss-based sender would tell them apart.
		cause = "loss without a queue: errors on the path, or a policer (a rate limit that drops instead of queueing); a test with -C cubic tells them apart"
	}
	cc := v.cc
	if cc == "" {
		cc = "the congestion control"
	}
	kept := cc + " kept the rate up; a loss-based sender (cubic, reno) would be held to about " + rate(bound) + " here."
	switch {
	case bound >= v.goodput:
		kept = "At this rate the loss's Mathis bound, " + rate(bound) + ", is above the rate: it held nothing back."
	case ownQueue:
		kept = "If the loss is the path's, a loss-based sender (cubic, reno) would be held to about " + rate(bound) + " here."
	case v.cc != "bbr":
		// A loss-based sender above its bound: the losses came few to a
		// window (bursts, or slow start), not spread over the transfer.
		kept = "The rate stayed above the " + rate(bound) + " Mathis bound for loss spread evenly: the losses came clustered."
	}
	f.Summary = fmt.Sprintf("%.3g%% of the bytes sent were retransmitted: %s. %s", 100*v.loss, cause, kept)
	if loud {
		f.Summary += " " + lossCost(v)
	}
	f.Explanation = "The Mathis bound, C·MSS/(RTT·√p), is what a loss-based congestion control averages at loss p. BBR paces at the bottleneck rate it measures and does not treat random loss as congestion, so it can run far above the bound; other flows and hosts on the path may not. " +
		"Every retransmitted byte crosses the path twice: the capacity it takes is lost to this transfer and to everything sharing the path."
	f.Evidence = []model.Evidence{
		lossEvidence(v),
		{What: "congestion control", Value: cc, Source: v.source(model.Sender)},
		{What: fmt.Sprintf("Mathis bound, C = %.2f", o.c()), Value: rate(bound)},
		rttEvidence(v),
	}
	if v.peakRTT > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "highest smoothed round trip in any sample, slow start included", Value: v.peakRTT.Round(100 * time.Microsecond).String(), Source: v.source(model.Sender)})
	}
	if v.retransSpread > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "share of the measured intervals with retransmissions", Value: pct(v.retransSpread), Source: v.source(model.Sender)})
	}
	if v.deliveryMax > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "highest delivery rate the kernel measured", Value: rate(v.deliveryMax), Source: v.source(model.Sender)})
	}
	f.Evidence = append(f.Evidence, lossCostEvidence(v)...)
	f.Fix = []model.Fix{{Where: "path", Kind: "ethtool", Command: "on each host and router interface along the path: ethtool -S IFACE | grep -iE 'err|drop|crc'; ip -s link show IFACE"}}
	if ownQueue {
		f.Fix = append([]model.Fix{{Where: v.senderName(), Kind: "tcpscope", Command: "tcpscope test -C cubic: at the path's rate with under 0.1% retransmitted, the loss was bbr's own queue overflow"}}, f.Fix...)
	}
	return f, true
}

// queueOverflow: a loss-based sender's losses were its bottleneck's
// queue overflowing, a few to each sawtooth, not loss spread over the
// path: a queue stood at the rate all through (the median smoothed RTT,
// queueHeld), and the rate stayed policerOverMathis × above the bound
// that loss spread evenly allows, which random loss would have held it
// near. A queue shorter than the BDP leaves the link idle after each
// halving, so the average falls short of the path (pathFull): reno
// under 0.25–0.38 BDP of queue at 422–516 Mbit/s averaged 57–62% of the
// path, 4.5× its Mathis bound, with 1.3 ms of queue standing.
func queueOverflow(v *view, bound model.Bitrate) bool {
	return lossBased(v) && bound > 0 && float64(v.goodput) >= policerOverMathis*float64(bound) && queueHeld(v)
}

// queueHeld: the median smoothed RTT stood a queue above the minimum,
// of at least atRateQueueMin and atRateQueueSegs at the rate that
// arrived: what queueAtRate asks, at any share of the path.
func queueHeld(v *view) bool {
	return v.minRTT > 0 && v.srtt-v.minRTT >= atRateQueueMin && queuedSegs(v) >= atRateQueueSegs
}

// lossCost says what heavy loss cost the transfer: nothing when it ran
// at the highest rate the kernel measured the path delivering with a
// queue standing (the losses were that queue overflowing; the
// retransmissions cost the path's capacity, not this rate), otherwise
// what the same window carries without loss against what arrived.
func lossCost(v *view) string {
	if share, ok := v.ofDelivery(); bbrQueueHeld(v) && (!ok || share < deliveredShare) {
		return fmt.Sprintf("It cost this transfer no rate (bbr kept a queue of %v standing at its rate, the path busy throughout), but every retransmitted byte took the path's capacity twice, and a loss-based flow sharing the path is held near the Mathis bound.",
			(v.srtt - v.minRTT).Round(100*time.Microsecond))
	}
	if lossCostsNothing(v) {
		share, _ := v.ofDelivery()
		return fmt.Sprintf("It cost this transfer no rate (it averaged %s of the highest rate the kernel measured delivering, %s), but every retransmitted byte took the path's capacity twice, and a loss-based flow sharing the path is held near the Mathis bound.",
			pct(share), rate(v.deliveryMax))
	}
	if !v.windowOK || !v.receivedOK || v.windowBound <= 0 {
		return "What it cost the rate is not known: the window the receiver offered, or what arrived, was not measured."
	}
	return fmt.Sprintf("Without the loss the same window carries up to %s (%s per round trip of %v); the transfer got %s.",
		rate(v.windowBound), v.peerWindow.Binary(), v.minRTT.Round(100*time.Microsecond), rate(v.goodput))
}

// lossCostsNothing: the transfer ran at the path's ceiling (at least
// deliveredShare of the highest delivery rate the kernel measured) with
// a queue standing or having stood (so the losses were a queue
// overflowing), or under BBR, which keeps its rate whatever it loses.
// A queue that stood only in slow start says the ceiling is where slow
// start found it: the measured time must reach deliveredShare of slow
// start's delivery peak too, or the loss cut a window that spent the
// test regrowing under it (cubic at 165 ms, 2.5% lost in slow start's
// overshoot: 5.51 Mbit/s of a 13.6 Mbit/s path, at 0.89 of the measured
// time's own peak, was called a loss that cost nothing).
func lossCostsNothing(v *view) bool {
	if bbrQueueHeld(v) {
		return true
	}
	share, ok := v.ofDelivery()
	atCeiling := ok && share >= deliveredShare
	if !atCeiling {
		return false
	}
	if pathFull(v) || v.cc == "bbr" {
		return true
	}
	return queueStood(v) && float64(v.goodput) >= deliveredShare*float64(v.deliveryPeak)
}

// bbrQueueHeld: BBR, which paces at the rate it measures whatever it
// loses, kept a queue standing at its rate through the measured time
// (the median round trip, queueHeld): the bottleneck was busy, so its
// loss cost no rate. The delivery rate the kernel samples, against
// which lossCostsNothing otherwise reads the ceiling, can read above the
// path on a short one (two bbr streams on a 1.3 ms, 60.8 Mbit/s path
// sampled 80.9 and ran 58.7 with 3.4 ms of queue standing, and read as
// held by their 15% loss). A loss-based sender's median round trip can
// still carry slow start's queue while a buffer holds it below the path,
// so for it the ceiling decides.
func bbrQueueHeld(v *view) bool { return v.cc == "bbr" && queueHeld(v) }

// localLoss: retransmissions over loopback are the host dropping its own
// packets between the two applications (a backlog or receive queue
// overflowing, at tens of Gbit/s): information about the host, a warning
// when heavy. There is no path to fix.
func localLoss(v *view, loud bool) model.Finding {
	f := model.Finding{ID: "lossy-path", Layer: model.LayerHost, Severity: model.Info, Confidence: model.Medium}
	if loud {
		f.Severity = model.Warning
	}
	f.Summary = fmt.Sprintf("%.3g%% of the bytes sent (%d segments) were retransmitted between two sockets of this host: its own queues dropped them (a receive backlog or queue overflowing as the reader fell behind), as there is no path.",
		100*v.loss, v.retrans)
	if 2*v.dsack >= v.retrans {
		f.Summary = fmt.Sprintf("%.3g%% of the bytes sent (%d segments) were retransmitted between two sockets of this host, and the receiver's DSACKs say %d of them arrived twice: packets overtook each other in the host's receive queues, and none was lost on a path, as there is none.",
			100*v.loss, v.retrans, v.dsack)
	}
	f.Explanation = "Over loopback a packet is handed from one socket to the other by the same kernel; one is dropped only when the receiving side's backlog or queue is full. It costs CPU rather than a path's capacity."
	f.Evidence = []model.Evidence{lossEvidence(v)}
	if v.dsack > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "of them retransmitted for nothing (DSACKs)", Value: fmt.Sprint(v.dsack), Source: v.source(model.Sender)})
	}
	f.Fix = []model.Fix{{Where: "both ends", Kind: "sysctl", Command: "sysctl net.core.netdev_max_backlog (raise it if the drops matter); check the reader's CPU"}}
	return f
}

// jumbo: on a loss-limited path a larger MTU raises the bound linearly.
func jumbo(v *view, lim limitSet, o Options) (model.Finding, bool) {
	// Bursts take whole flights whatever their packets' size.
	if !lim["loss-limited"] || v.pmtu == 0 || v.pmtu > 1500 || v.rtoShare() >= rtoShare {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "jumbo-frames", Layer: model.LayerLink, Severity: model.Info, Confidence: model.Low}
	gain := float64(9000-52) / float64(v.mss)
	f.Summary = fmt.Sprintf("Jumbo frames would help: with loss per packet, a 9000-byte MTU raises the loss bound about %.1f×.", gain)
	f.Explanation = "The Mathis bound is linear in the MSS when loss strikes packets regardless of size, and grows with √MTU when it comes from bit errors. Every link on the path must carry the larger frames."
	f.Evidence = []model.Evidence{{What: "path MTU", Value: v.pmtu.Decimal(), Source: v.source(model.Sender)}}
	f.Fix = []model.Fix{{Where: "path", Kind: "ip", Command: "ip link set dev IFACE mtu 9000 on both hosts, and on every switch and router between them"}}
	return f, true
}
