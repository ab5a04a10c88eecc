package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpmath"
)

// Options tune a diagnosis.
type Options struct {
	// Target is the rate the user expects of the path (--target-rate);
	// zero: unknown, and predictions say what a fix lifts the bound to
	// rather than whether it reaches a target.
	Target model.Bitrate
	// MathisC is the Mathis constant; zero means tcpmath.MathisC, √(3/2).
	MathisC float64
}

func (o Options) c() float64 {
	if o.MathisC > 0 {
		return o.MathisC
	}
	return tcpmath.MathisC
}

// HeavyLoss is the retransmitted share of the bytes sent that is never
// left without a finding of warning severity on it (docs/DIAGNOSES.md,
// "No silent loss"), whatever else limited the transfer.
const HeavyLoss = 0.01

// HeavyRTOShare is the share of a stream's life in retransmission
// timeouts that is never left without such a finding either.
const HeavyRTOShare = 0.05

// Heavy reports whether direction d of run lost so much that the rules
// must name the loss (HeavyLoss of the bytes retransmitted, or
// HeavyRTOShare of a stream's life in retransmission timeouts): the condition of "No silent
// loss", for a judge of the diagnosis to hold it to.
func Heavy(run *model.Run, d model.Direction) bool {
	for _, v := range views(run) {
		if v.dir == d && heavy(v) {
			return true
		}
	}
	return false
}

// Thresholds of the rules; docs/DIAGNOSES.md explains each.
const (
	// limitedShare: a sender limited by one cause for at least this share
	// of the measured time is limited by it.
	limitedShare = 0.5
	// rwndSomeShare: a sender this often waiting on the window, with
	// goodput at window/RTT, is window-bound.
	rwndSomeShare = 0.1
	// sawtoothFloor: a loss-based sender that lost in the measured time
	// averages between half its peak window and the peak (reno's
	// sawtooth 0.75 of it, cubic's more): one at this share of what the
	// receive window carries or more, waiting on that window at its
	// peaks, had the window as its ceiling.
	sawtoothFloor = 0.5
	// slowReaderRatio: a receiver whose median window is this many times
	// smaller than the largest it advertised had its buffer full of
	// unread data: its application reads slower than the network.
	slowReaderRatio = 4
	// stalledBytes: a transfer that delivered less than this while it
	// spent half its time in timeouts got through only its first window.
	stalledBytes = 256 * model.KiB
	// minUnread: less unread data than this is a reader between reads.
	minUnread = 16 * model.KiB
	// sndbufShare is lower: a send buffer limit alternates with others.
	sndbufShare = 0.3
	// appShare: a sender idle (nothing unsent, windows open) in this share
	// of its samples, or of its time, was starved of data.
	appShare = 0.5
	// minIdleInstants: a watched socket's application is unknown, so
	// its idleness is told by instants (samples with nothing unsent and
	// both windows open), from this many at least. From one or two, a
	// transfer's first samples, caught between writes while the kernel
	// counted it busy 94% of the time, read as an application with
	// nothing to send.
	minIdleInstants = 3
	// minFullSamples: a full send buffer is read from at least this many
	// samples (one snapshot can catch any sender between two writes).
	minFullSamples = 2
	// appRateShare: goodput at least this share of the rate -b asked for
	// is the application's own limit.
	appRateShare = 0.9
	// pacedShare of a -b rate received is a paced sender that sent
	// what it was asked to, however little that was.
	pacedShare = 0.5
	// serverCapShare of a server's rate cap is a transfer held by it:
	// read pacing runs a little under the rate it aims at.
	serverCapShare = 0.85
	// sendQPlateau: a send queue that stayed within this share of its
	// largest over the idle samples is held at a ceiling (a full buffer),
	// not fed in bursts.
	sendQPlateau = 0.7
	// nearWindow: goodput within this share of window/RTT is window-bound
	// (used when the kernel lacks the chrono counters).
	nearWindow = 0.85
	// deliveredShare: a transfer held by the path averages within this
	// share of the highest delivery rate the kernel measured (0.89 to
	// 1.0 in the lab's healthy runs, 1 Gbit/s LANs included); one held
	// below the path by its window averages less (0.42 with 0.1% loss
	// at 100 ms under cubic).
	deliveredShare = 0.75
	// overrunRatio and overrunMargin: a send queue this far past its
	// buffer (×1.5 and 64 KiB more, one write segment of the kernel's)
	// was let past it in bursts (see overrun). The lab's 64 KiB buffer
	// under cubic queued 190–300 kB; tuned senders stay under their
	// buffer.
	overrunRatio  = 1.5
	overrunMargin = 64 * model.KiB
	// coLimit: a second bound within this factor of the goodput binds
	// with the first (fixing the first alone gains at most this much).
	coLimit = 3.0
	// coLoss: beside a window or buffer that held the sender, loss binds
	// too when goodput is at least this share of its Mathis bound.
	coLoss = 1 / 1.5
	// bloatAdded and bloatRatio: queueing delay under load of at least
	// bloatAdded and at least bloatRatio × the minimum RTT is bufferbloat.
	bloatAdded = 20 * time.Millisecond
	bloatRatio = 1.0
	// fullQueueMin and fullQueueShare: queueing delay of at least this
	// (and this share of the minimum RTT) means the bottleneck's queue
	// was in use: the sender reached the path's rate.
	fullQueueMin   = 2 * time.Millisecond
	fullQueueShare = 0.05
	// lanQueueMin and lanQueueRatio: on a short path a queue is short in
	// time: 1 ms or more of extra delay that also takes the smoothed RTT
	// to lanQueueRatio × its minimum is one (a LAN's 1.5 ms at 840 Mbit/s,
	// 6 × its 0.29 ms, held 110 segments), where on a 21 ms path the same
	// millisecond is BBR's probing at a quarter of the link's rate.
	lanQueueMin   = time.Millisecond
	lanQueueRatio = 3.0
	// fullQueueSegs: the extra delay at the rate that arrived must hold
	// this many segments to be a queue: delayed ACKs on a small window
	// add a few ms that hold less than one.
	fullQueueSegs = 4
	// atPathShare: a transfer averaging this share of the highest
	// delivery rate its kernel measured (its streams summed) ran at the
	// path's rate: above the sawtooth of a sender held by random loss
	// (0.42–0.80 of its peaks in the lab's loss recordings; cubic's
	// averages 0.85 in theory, reno's 0.75), where reno overflowing its
	// own short queue averaged 0.87–0.98 (eight streams 0.92). The
	// standing queue queueAtRate asks beside it is what tells the path
	// from loss. See queueAtRate.
	atPathShare = 0.85
	// atRateQueueMin and atRateQueueSegs: the least standing queue, in
	// time and in segments at the rate, that queueAtRate reads as one:
	// above the 0.2–0.4 ms the hosts' and the emulator's scheduling add,
	// and above the under 3 segments a sender held by random loss leaves
	// (reno on a 0.42 BDP queue stood 5.8 at the path's rate).
	atRateQueueMin  = 500 * time.Microsecond
	atRateQueueSegs = 4
	// poissonMedian and poissonLow: with a median of at least
	// poissonMedian retransmissions per measured interval, random loss
	// leaves no interval under 1/poissonLow of it (P ≈ 2·10⁻⁵ for a
	// Poisson count of mean 20); fewer is loss in episodes.
	poissonMedian = 20
	poissonLow    = 4
	// lossyShare: loss of at least this share is reported even when it
	// did not set the rate.
	lossyShare = 0.0005
	// lossFloor: below this retransmitted share loss is negligible.
	lossFloor = 1e-5
	// mathisBand: goodput within [1/mathisBand, mathisBand] × the Mathis
	// bound is what loss allows (random loss lands at 1–1.5×, SACK helps).
	mathisBand = 3.0
	// policerLoss, policerOverMathis and plateauSpread: a policer's
	// signature. Heavy loss (at least policerLoss), with a loss-based
	// sender at least policerOverMathis × above the rate random loss that
	// heavy allows (the drops come in bursts above a rate, one congestion
	// signal for many packets), no queue, and per-interval goodput within
	// plateauSpread of itself.
	policerLoss       = 0.01
	policerOverMathis = 2.0
	plateauSpread     = 1.15
	// policerQueueShare: a queue that stood at some moment (the highest
	// smoothed round trip over the minimum) of at least this share of
	// the minimum RTT, and at least queueMin, is a drop-tail queue that
	// filled before it dropped: a quarter of a BDP is the least a
	// bottleneck sized for loss-based senders holds (BDP/√n for 16
	// flows). A policer's drops leave the round trip at its minimum
	// (0.1–0.9 ms over it in the lab; 2.9 ms once, slow start's burst
	// queueing at a 300 Mbit/s link in front of a 50 Mbit/s policer).
	policerQueueShare = 0.25
	// burstQueue: more bytes than a sender puts on the wire at once
	// (four 64 KiB TSO bursts); see queueStood.
	burstQueue = 256 * model.KiB
	// heavyLoss and heavyRTOShare: a transfer that retransmitted at least
	// heavyLoss of its bytes, or spent heavyRTOShare of its life in
	// retransmission timeouts, is never left without a finding of at
	// least warning severity on its loss: at 1% a loss-based sender's
	// Mathis bound is 14 Mbit/s at 10 ms (C·MSS/(RTT·√p)), and one byte
	// in a hundred of the path's capacity is spent twice.
	heavyLoss     = HeavyLoss
	heavyRTOShare = HeavyRTOShare
	// quietAfter: a policer's loss that stopped is followed by at least
	// this many measured intervals in a row without a retransmission,
	// the congestion window regrowing after slow start outran the
	// policer. Loss in bursts on the path (the lab's Gilbert-Elliott
	// channel: about 20 bursts a second) leaves no loss-free second.
	quietAfter = 2
	// sustained: loss in at least this share of the measured intervals
	// is sustained, as a path that loses (random loss, a policer dropping
	// whenever the sender exceeds its rate) makes it; slow start's one
	// overshoot loses in one or two.
	sustained = 0.75
	// growthRise: a rate whose last measured interval is this many times
	// its first, rising in most steps, was still climbing (see
	// stillGrowing): a sender at the path's rate varies by its sawtooth,
	// reno's 0.5–1 of its peak, and does not climb through a test.
	growthRise = 1.25
	// smallMSS: an MSS below this on a path whose MTU allows 1460 is small.
	smallMSS = 1000
	// rtoQuiet: a receiver to which nothing arrived for this long at the
	// end of a memory-to-memory test saw its sender stall: the first
	// timeouts' waits (200, 400, 800 ms) sum to 1.4 s.
	rtoQuiet = 2 * time.Second
	// rtoShare: a sender that spent this share of the test recovering
	// from timeouts stalled.
	rtoShare = 0.1
	// minReorderings and reorderShare: reordering is reported when at
	// least minReorderings were seen and at least reorderShare of the
	// segments sent (a healthy path reorders none; a few per million are
	// noise); it is a warning when DSACKs show reorderShare of them
	// retransmitted for nothing.
	minReorderings = 10
	reorderShare   = 1e-3
	// minZeroWindows and zeroWindowShare: a closed window in fewer
	// samples than this (and this share of them) is a reader caught
	// between two reads.
	minZeroWindows  = 2
	zeroWindowShare = 0.1
	// fullWindow64K is the largest window without window scaling.
	fullWindow64K = 65535
)

// Test diagnoses a test's run: findings for every direction, the primary
// ones (what limits the transfer) first, then by severity. It is pure: the
// same run gives the same findings.
func Test(run *model.Run, opts Options) []model.Finding {
	var all []model.Finding
	if run.Config.IsUDP() {
		all = datagramTest(run, opts)
	} else {
		for _, v := range views(run) {
			fs := direction(v, run, opts)
			all = append(all, fs...)
		}
	}
	sortFindings(all)
	return all
}

// sortFindings puts the primary findings first, in the order the rules
// gave them (the verdict of each direction, then its co-limits), then the
// rest by severity.
func sortFindings(all []model.Finding) {
	slices.SortStableFunc(all, func(a, b model.Finding) int {
		switch {
		case a.Primary && b.Primary:
			return 0
		case a.Primary:
			return -1
		case b.Primary:
			return 1
		}
		return a.Severity.Rank() - b.Severity.Rank()
	})
}

// limitSet names the findings that limit a direction.
type limitSet map[string]bool

// direction runs the rules on one direction: what limits it (one
// finding, or several that bind together, all primary), what else it
// costs, and the verdict that joins them.
func direction(v *view, run *model.Run, o Options) []model.Finding {
	var out []model.Finding
	if f, ok := stalled(v); ok {
		f.Primary = true
		out = append(out, f)
		// The timeouts are real whatever dropped the packets (heavy
		// bursts of loss can stall a transfer like a black hole).
		if g, ok := rtoStalls(v, limitSet{f.ID: true}); ok {
			out = append(out, g)
		}
		verdict(v, out, 1)
		for i := range out {
			out[i].Direction = v.dir
		}
		return out
	}
	limits := limit(v, run, o)
	lim := limitSet{}
	for i := range limits {
		limits[i].Primary = true
		lim[limits[i].ID] = true
	}
	out = append(out, limits...)
	for _, rule := range []func(*view, limitSet) (model.Finding, bool){
		bufferbloat, sackOff, timestampsOff, smallMSSRule, rtoStalls, reordering, zeroWindow,
	} {
		if f, ok := rule(v, lim); ok && !lim[f.ID] {
			out = append(out, f)
		}
	}
	if f, ok := jumbo(v, lim, o); ok {
		out = append(out, f)
	}
	if f, ok := lossyPath(v, lim, o); ok {
		out = append(out, f)
	}
	verdict(v, out, len(limits))
	for i := range out {
		out[i].Direction = v.dir
	}
	return out
}

// verdict makes the first finding the direction's one verdict: when
// several limits bind it names them together, and it names what else
// the transfer pays (every warning and critical finding beside the
// limit), raising its severity to theirs: a transfer that pays for
// something is never called healthy.
func verdict(v *view, out []model.Finding, nLimits int) {
	head := &out[0]
	if nLimits > 1 {
		var ids []string
		for _, f := range out[:nLimits] {
			ids = append(ids, f.ID)
		}
		head.Summary = fmt.Sprintf("%d limits bind together (%s): fixing one alone leaves the transfer at the other. %s",
			nLimits, strings.Join(ids, " and "), head.Summary)
		for i := 1; i < nLimits; i++ {
			out[i].Summary = fmt.Sprintf("Binds together with %s: %s", head.ID, out[i].Summary)
		}
	}
	var costs, also []string
	for _, f := range out[nLimits:] {
		if f.Severity == model.Info {
			continue
		}
		if pathCost(f.ID) {
			costs = append(costs, costPhrase(v, f))
		} else {
			also = append(also, costPhrase(v, f))
		}
		if f.Severity.Rank() < head.Severity.Rank() {
			head.Severity = f.Severity
		}
	}
	if len(costs)+len(also) == 0 {
		return
	}
	var tail []string
	if len(costs) > 0 {
		tail = append(tail, "the path costs it "+strings.Join(costs, " and "))
	}
	if len(also) > 0 {
		tail = append(tail, "also: "+strings.Join(also, " and "))
	}
	if head.ID == "bottleneck" && nLimits == 1 {
		head.Summary = fmt.Sprintf("The path's bottleneck sets the rate, %s, with the hosts not holding the sender back; %s.",
			rate(v.goodput), strings.Join(tail, "; "))
		head.Explanation = bottleneckExplanation(v) + " What else stands is below: fix that, not the rate."
		return
	}
	rest := strings.Join(tail, "; ")
	head.Summary += " " + strings.ToUpper(rest[:1]) + rest[1:] + "."
}

// pathCost reports the findings that are a cost the path puts on the
// transfer (delay, loss, reordering, small segments, timeouts), as
// against a setting of the hosts or a behaviour of the receiver.
func pathCost(id string) bool {
	switch id {
	case "bufferbloat", "lossy-path", "reordering", "small-mss", "rto-stalls":
		return true
	}
	return false
}

// costPhrase is what a finding beside the limit costs, in a few words
// with its id, for the verdict.
func costPhrase(v *view, f model.Finding) string {
	switch f.ID {
	case "bufferbloat":
		return fmt.Sprintf("%v of queueing delay (bufferbloat)", (v.srtt - v.minRTT).Round(time.Millisecond))
	case "lossy-path":
		return fmt.Sprintf("%.3g%% of the bytes sent retransmitted (lossy-path)", 100*v.loss)
	case "reordering":
		if v.dsack > 0 {
			return fmt.Sprintf("%d reorderings, %d segments retransmitted for nothing (reordering)", v.reordSeen, v.dsack)
		}
		return fmt.Sprintf("%d reorderings (reordering)", v.reordSeen)
	case "small-mss":
		return fmt.Sprintf("%d-byte segments (small-mss)", v.mss)
	case "sack-off":
		return "no selective acknowledgments (sack-off)"
	case "rto-stalls":
		return fmt.Sprintf("%d retransmission timeouts, %s of the test (rto-stalls)", v.rtos, pct(v.rtoShare()))
	case "zero-window":
		return fmt.Sprintf("a closed receive window in %d of %d samples (zero-window)", v.zeroWindows, v.samples)
	}
	return f.ID
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

func rate(r model.Bitrate) string { return r.String() }

func limitedEvidence(v *view) model.Evidence {
	l := v.limited
	return model.Evidence{
		What:   "sender's time limited by receive window / send buffer / congestion window / application",
		Value:  fmt.Sprintf("%s / %s / %s / %s", pct(l.Rwnd), pct(l.Sndbuf), pct(l.Cwnd), pct(l.App)),
		Source: v.source(model.Sender),
	}
}

func rttEvidence(v *view) model.Evidence {
	return model.Evidence{What: "round-trip time (min, median smoothed)",
		Value: fmt.Sprintf("%v, %v", v.minRTT.Round(time.Microsecond), v.srtt.Round(time.Microsecond)), Source: v.source(model.Sender)}
}

func goodputEvidence(v *view) model.Evidence {
	if v.fromAcks {
		// The receiver never reported: what its end acknowledged is
		// what arrived.
		return model.Evidence{What: "goodput (bytes the receiver acknowledged: its report is missing)", Value: rate(v.goodput), Source: v.source(model.Sender)}
	}
	return model.Evidence{What: "goodput", Value: rate(v.goodput), Source: v.source(model.Receiver)}
}

// bufferFor is the socket buffer a window of w needs (model.SockBufFor),
// rounded up to whole MiB.
func bufferFor(w model.Bytes) model.Bytes {
	b := model.SockBufFor(w)
	return (b + model.MiB - 1) / model.MiB * model.MiB
}

// pathFull reports whether a queue built up on the path under load: then
// the bottleneck was full, and its losses were the queue overflowing
// (congestion), not what set the rate.
//
// The delay must also be a queue of packets: at the rate that arrived,
// the extra delay holds at least fullQueueSegs segments. A sender far
// below the path's rate (cubic at 4.5 Mbit/s on a 50 Mbit/s path with
// 1% loss) shows 2.4 ms more smoothed RTT than its minimum from delayed
// ACKs on a window of a few segments, which at its rate is under one
// segment: no queue stood.
func pathFull(v *view) bool {
	if queueAtRate(v) {
		return true
	}
	extra := v.srtt - v.minRTT
	if v.minRTT <= 0 || (extra < queueMin(v) && (extra < lanQueueMin || float64(v.srtt) < lanQueueRatio*float64(v.minRTT))) {
		return false
	}
	if !v.receivedOK || v.mss <= 0 {
		return true // the rate is not known: the delay alone decides
	}
	return queuedSegs(v) >= fullQueueSegs
}

// queuedSegs is how many segments the median extra round trip holds at
// the rate that arrived: the queue standing on the path.
func queuedSegs(v *view) float64 {
	if !v.receivedOK || v.mss <= 0 || v.srtt <= v.minRTT {
		return 0
	}
	return segsIn(v.goodput, v.srtt-v.minRTT, v.mss)
}

// segsIn is how many segments of mss a queue of delay holds at rate.
func segsIn(rate model.Bitrate, delay time.Duration, mss model.Bytes) float64 {
	return float64(rate) / 8 * delay.Seconds() / float64(mss)
}

// queueAtRate: a queue shorter in time than queueMin still stood, when
// the transfer ran at the highest rate the kernel measured delivering
// (atPathShare of it, per stream) with at least fullQueueSegs segments
// waiting at that rate in the median sample. Both say the path, not
// the sender, set the rate: a sender held below the path by loss rides
// a sawtooth under its peaks (cubic's averages 0.85 of them, reno's
// 0.75; 0.42 to 0.80 in the lab's loss recordings) and leaves no queue
// standing (under 3 segments in all of them). Cubic at 144 Mbit/s
// through a 162 Mbit/s link with a 2 ms queue, 6 ms away, stood 1.1 ms
// (13 segments) at 1.05 of its delivery peak, and was read as loss-limited
// by a queue threshold of 2 ms.
//
// A sender held by its own window or buffer runs at a ceiling too, with
// the scheduling of the hosts and the emulator adding up to 0.4 ms to
// its smoothed round trip (4.5 segments at 155 Mbit/s, a 1.2 MiB window
// on a 949 Mbit/s, 63 ms path): so the queue must stand at least
// atRateQueueMin and atRateQueueSegs, and the receiver's window must
// have had room (its bound coLimit × the rate or more).
func queueAtRate(v *view) bool {
	share, ok := v.ofDelivery()
	return ok && share >= atPathShare && v.srtt-v.minRTT >= atRateQueueMin && queuedSegs(v) >= atRateQueueSegs &&
		v.windowOK && float64(v.windowBound) >= coLimit*float64(v.goodput) && !unchecked(v)
}

// unchecked: a loss-based sender lost nothing in the measured time (no
// retransmission, or none in any measured interval: slow start's
// recovery spilling past the omit mark is slow start's). Its
// window grew all the while, so a queue short in time cannot have stood
// at the path's rate without overflowing: what stood was the sender's
// own bursts, queued at a faster link (cubic at 111 Mbit/s through a
// 692 Mbit/s link, 1.2 ms "standing" from 64 KiB bursts, regrowing
// toward a 272 Mbit/s policer, was read as the path full).
func unchecked(v *view) bool {
	return lossBased(v) && v.sndKernel && ((v.lossOK && v.retrans == 0) || v.quietMeasured)
}

// queueStood: at some moment, slow start's included, the round trip
// rose far enough above its minimum that a queue stood on the path
// (policerQueueShare of it, at least queueMin): a drop-tail queue fills
// before it drops. The queue must also hold atRateQueueSegs segments at
// the highest rate the path delivered: a queue that drops at that rate
// is full of its packets, and one that held under a segment of them
// stood at a faster link before the drop (2.7 ms at a 32.3 Mbit/s
// link, 0.9 segments of the 3.65 Mbit/s a policer behind it passed).
//
// A queue holding more than burstQueue bytes at that rate stood too,
// whatever its share of the round trip: a faster link's queue in front
// of a policer holds at most one of the sender's bursts, and fewer of
// the policed rate's bytes than that. On a long path a quarter of the
// round trip is more than the smoothed RTT shows of a short queue
// filling once (reno's slow start on 153.6 ms into a 0.3 BDP queue: 30
// ms, 956 kB at the 255 Mbit/s delivered, then 3.7% lost).
func queueStood(v *view) bool {
	extra := v.peakRTT - v.minRTT
	if v.peakRTT <= 0 || extra < queueMin(v) {
		return false
	}
	peak := max(v.deliveryMax, v.goodput)
	if peak <= 0 || v.mss <= 0 {
		return extra >= time.Duration(policerQueueShare*float64(v.minRTT)) // the rate is not known: the delay alone decides
	}
	segs := segsIn(peak, extra, v.mss)
	if extra < time.Duration(policerQueueShare*float64(v.minRTT)) {
		return segs*float64(v.mss) >= float64(burstQueue)
	}
	return segs >= atRateQueueSegs
}

// queueRose: at some moment a queue of queueMin or more stood, holding
// atRateQueueSegs segments of the highest rate the path delivered: what
// bbr's probes build on a drop-tail queue shorter than the two BDPs it
// keeps in flight (5.2 ms at its peak, 9 segments, on a 20.3 Mbit/s,
// 23 ms path with a 0.41 BDP queue). queueStood asks more of it (a
// quarter of the round trip), to keep a policer's burst queue at a
// faster link out.
func queueRose(v *view) bool {
	extra := v.peakRTT - v.minRTT
	peak := max(v.deliveryPeak, v.goodput)
	return v.peakRTT > 0 && extra >= queueMin(v) && v.mss > 0 && peak > 0 &&
		segsIn(peak, extra, v.mss) >= atRateQueueSegs
}

// lossBased reports a sender whose congestion control is known and cuts
// its window at each loss (reno, cubic, and the others but BBR).
func lossBased(v *view) bool { return v.cc != "" && v.cc != "bbr" }

// heavy reports loss no transfer is left silent about: heavyLoss of
// the bytes retransmitted, or heavyRTOShare of the life in timeouts.
func heavy(v *view) bool {
	return v.sndKernel && ((v.lossOK && v.loss >= heavyLoss) || v.rtoShare() >= heavyRTOShare)
}

// lossCostEvidence says what the loss cost: what the same window would
// carry without it (the largest window the receiver offered per round
// trip of the minimum RTT), against what arrived. Absent when the window
// or what arrived is not known.
func lossCostEvidence(v *view) []model.Evidence {
	if !v.windowOK || !v.receivedOK || v.windowBound <= 0 {
		return nil
	}
	return []model.Evidence{{What: "what the same window carries without loss (largest window offered / min RTT), against what arrived",
		Value: fmt.Sprintf("%s, against %s", rate(v.windowBound), rate(v.goodput)), Source: v.source(model.Sender)}}
}

// queueMin is the least extra round trip that is a queue in use on the
// path (fullQueueMin, fullQueueShare).
func queueMin(v *view) time.Duration {
	return max(fullQueueMin, time.Duration(fullQueueShare*float64(v.minRTT)))
}

// mathisBound is what loss-based senders (reno, cubic) average at the
// direction's loss: N·C·MSS/(minRTT·√p).
func mathisBound(v *view, o Options) model.Bitrate {
	return model.Bitrate(float64(max(v.streams, 1)) * float64(tcpmath.Mathis(v.mss, v.minRTT, v.loss, o.c())))
}
