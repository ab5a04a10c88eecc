package diagnose

import (
	"fmt"
	"math"
	"slices"
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

// Thresholds of the rules; docs/DIAGNOSES.md explains each.
const (
	// limitedShare: a sender limited by one cause for at least this share
	// of the measured time is limited by it.
	limitedShare = 0.5
	// rwndSomeShare: a sender this often waiting on the window, with
	// goodput at window/RTT, is window-bound.
	rwndSomeShare = 0.1
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
	// appShare: a memory-to-memory sender idle this much is starved.
	appShare = 0.5
	// nearWindow: goodput within this share of window/RTT is window-bound
	// (used when the kernel lacks the chrono counters).
	nearWindow = 0.85
	// bloatAdded and bloatRatio: queueing delay under load of at least
	// bloatAdded and at least bloatRatio × the minimum RTT is bufferbloat.
	bloatAdded = 20 * time.Millisecond
	bloatRatio = 1.0
	// fullQueueMin: queueing delay of at least this (and a quarter of the
	// minimum RTT) means the bottleneck's queue was in use.
	fullQueueMin = 2 * time.Millisecond
	// lossyShare: loss of at least this share is reported even when it
	// did not set the rate.
	lossyShare = 0.0005
	// lossFloor: below this retransmitted share loss is negligible.
	lossFloor = 1e-5
	// mathisBand: goodput within [1/mathisBand, mathisBand] × the Mathis
	// bound is what loss allows (random loss lands at 1–1.5×, SACK helps).
	mathisBand = 3.0
	// smallMSS: an MSS below this on a path whose MTU allows 1460 is small.
	smallMSS = 1000
	// rtoShare: a sender that spent this share of the test recovering
	// from timeouts stalled.
	rtoShare = 0.1
	// reorderDegree: the kernel starts at 3; above it the path reordered.
	reorderDegree = 3
	// minReorderings: this many reorderings seen is reordering whatever
	// the degree (RACK can absorb them without raising it).
	minReorderings = 10
	// fullWindow64K is the largest window without window scaling.
	fullWindow64K = 65535
)

// Test diagnoses a test's run: findings for every direction, the primary
// one (what limits the transfer) first, then by severity. It is pure: the
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

// sortFindings puts the primary findings first, then by severity.
func sortFindings(all []model.Finding) {
	slices.SortStableFunc(all, func(a, b model.Finding) int {
		if a.Primary != b.Primary {
			if a.Primary {
				return -1
			}
			return 1
		}
		return a.Severity.Rank() - b.Severity.Rank()
	})
}

// direction runs the rules on one direction and marks its primary
// finding.
func direction(v *view, run *model.Run, o Options) []model.Finding {
	var out []model.Finding
	if f, ok := stalled(v); ok {
		f.Primary = true
		out = append(out, f)
		// The timeouts are real whatever dropped the packets (heavy
		// bursts of loss can stall a transfer like a black hole).
		if g, ok := rtoStalls(v, f); ok {
			out = append(out, g)
		}
		for i := range out {
			out[i].Direction = v.dir
		}
		return out
	}
	primary := limit(v, run, o)
	primary.Primary = true
	out = append(out, primary)
	for _, rule := range []func(*view, model.Finding) (model.Finding, bool){
		bufferbloat, sackOff, timestampsOff, smallMSSRule, rtoStalls, reordering, zeroWindow,
	} {
		if f, ok := rule(v, primary); ok {
			out = append(out, f)
		}
	}
	if f, ok := jumbo(v, primary, o); ok {
		out = append(out, f)
	}
	if f, ok := lossyPath(v, primary, o); ok {
		out = append(out, f)
	}
	for i := range out {
		out[i].Direction = v.dir
	}
	return out
}

// limit picks what held the sender back, the primary finding: the
// receiver's window, the send buffer, the application, loss, or the path
// itself.
func limit(v *view, run *model.Run, o Options) model.Finding {
	l := v.limited
	atWindow := v.windowOK && float64(v.goodput) >= nearWindow*float64(v.windowBound)
	receiverBound := v.cwndOverRwnd >= limitedShare && v.loss < lossFloor
	if slowReading(v, receiverBound) {
		return slowReader(v)
	}
	switch {
	case receiverBound && !v.limitedOK:
		return rwndLimited(v, run, o)
	case receiverBound && l.Rwnd >= rwndSomeShare:
		return rwndLimited(v, run, o)
	case v.limitedOK && l.Rwnd >= limitedShare && l.Rwnd >= l.Cwnd:
		return rwndLimited(v, run, o)
	case atWindow && (!v.limitedOK || l.Rwnd >= rwndSomeShare):
		// The kernel counts receive-window-limited time only while the
		// window is completely full; with cwnd ≈ rwnd the two alternate,
		// and goodput at window/RTT is the telling sign.
		return rwndLimited(v, run, o)
	case v.limitedOK && l.Sndbuf >= sndbufShare && l.Sndbuf >= l.Cwnd:
		return sndbufLimited(v, run, o)
	case v.limitedOK && l.App >= appShare:
		return appLimited(v, run)
	case v.appLimitedShare >= appShare && (!v.limitedOK || l.Rwnd+l.Sndbuf < rwndSomeShare):
		// Idle at most samples, and the chrono counters agree that no
		// window or buffer was ever what stopped it (a fast path drains
		// a small window between samples and looks idle too).
		return appLimited(v, run)
	case v.maxPacing > 0 && float64(v.goodput) >= nearWindow*float64(v.streams)*float64(v.maxPacing):
		return pacingLimited(v, run)
	}
	if !pathFull(v) {
		if f, ok := lossLimited(v, o); ok {
			return f
		}
	}
	return bottleneck(v, o)
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
	return model.Evidence{What: "goodput", Value: rate(v.goodput), Source: v.source(model.Receiver)}
}

// bufferFor is the socket buffer a window of w needs: Linux gives half of
// a buffer to the window by default (tcp_adv_win_scale), so twice w,
// rounded up to whole MiB.
func bufferFor(w model.Bytes) model.Bytes {
	b := 2 * w
	return (b + model.MiB - 1) / model.MiB * model.MiB
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
	if !v.opts.WindowScaling && win <= fullWindow64K {
		// The seed's case: without window scaling no buffer helps.
		f.ID = "wscale-off"
		f.Summary = fmt.Sprintf("Window scaling is off, so the receiver can offer at most 64 KiB: %s at this RTT, and the transfer got %s.",
			rate(tcpmath.WindowRate(fullWindow64K, v.minRTT)), rate(v.goodput))
		f.Explanation = "Without the window scale option (RFC 7323) a TCP window is a 16-bit number, at most 65,535 bytes, and a sender can have no more than one window in flight per round trip. " +
			"Either end can turn it off, and a middlebox can strip it from the handshake; then no buffer size helps."
		f.Evidence = append(f.Evidence, model.Evidence{What: "window scaling negotiated", Value: "no", Source: v.source(model.Sender)})
		f.Fix = []model.Fix{{Where: "both ends", Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_window_scaling=1"},
			{Where: "path", Kind: "firewall", Command: "if both ends have it on, find the middlebox that strips TCP options from SYNs"}}
		w, r := targetWindow(v, o, fullWindow64K)
		f.Effect = fmt.Sprintf("with window scaling and %s of receive buffer the window bound rises from %s to about %s",
			bufferFor(w).Binary(), rate(v.windowBound), rate(r))
		f.Predicted = model.Some(r)
		return f
	}
	w, r := targetWindow(v, o, win)
	buf := bufferFor(w)
	f.Summary = fmt.Sprintf("The receiver's window limits this transfer: the sender waited on it %s of the time, and %s per round trip of %v allows %s.",
		pct(v.limited.Rwnd), win.Binary(), v.minRTT.Round(time.Microsecond), rate(v.windowBound))
	if !v.limitedOK {
		f.Summary = fmt.Sprintf("The receiver's window limits this transfer: goodput %s is the window/RTT bound %s (%s per %v).",
			rate(v.goodput), rate(v.windowBound), win.Binary(), v.minRTT.Round(time.Microsecond))
	}
	f.Explanation = "TCP can have at most one receive window of data in flight per round trip, so the rate is at most window/RTT. The receiver's window comes from its socket buffer: " +
		"the autotuning maximum net.ipv4.tcp_rmem, or a fixed SO_RCVBUF (which turns autotuning off). A long path needs a window of its bandwidth-delay product."
	if run.Config.Window > 0 {
		f.Fix = []model.Fix{
			{Where: v.receiverName(), Kind: "sysctl", Command: fmt.Sprintf("sysctl -w net.core.rmem_max=%d", buf)},
			{Where: "application", Kind: "setsockopt", Command: fmt.Sprintf("setsockopt(SO_RCVBUF, %d), or leave SO_RCVBUF unset so autotuning can grow it (tcpscope test -w %s, or no -w)", buf, buf.Binary())},
		}
	} else {
		f.Fix = []model.Fix{{Where: v.receiverName(), Kind: "sysctl", Command: fmt.Sprintf("sysctl -w net.ipv4.tcp_rmem=\"4096 131072 %d\"", buf)}}
	}
	f.Effect = fmt.Sprintf("raising the receiver's buffer to %s lifts the window bound from %s to about %s", buf.Binary(), rate(v.windowBound), rate(r))
	if o.Target == 0 {
		f.Effect += " (with --target-rate the fix is sized for your path)"
	}
	f.Predicted = model.Some(r)
	return f
}

// slowReading: the receiving application left data unread while the
// sender waited on the window. The receiver's own queue (SIOCINQ) shows
// it directly: a median of unread bytes at least the window it advertised
// (a reader that keeps up leaves next to nothing). Runs recorded without
// the queue fall back on the window's shape: a median window many times
// below the largest means a buffer full of unread data.
func slowReading(v *view, receiverBound bool) bool {
	if v.recvQOK {
		// More unread than the window offers: the sender could not have
		// sent faster than the application read.
		return v.medianRecvQ >= minUnread && v.medianRecvQ >= v.medianWindow
	}
	return receiverBound && v.medianWindow > 0 && v.medianWindow*slowReaderRatio < v.peerWindow
}

func slowReader(v *view) model.Finding {
	f := model.Finding{ID: "slow-reader", Layer: model.LayerApplication, Severity: model.Critical, Confidence: model.High}
	f.Summary = fmt.Sprintf("The receiving application reads slower than the network delivers: its window stayed near %s (median) although its buffer allowed %s, and the transfer got %s.",
		v.medianWindow.Binary(), v.peerWindow.Binary(), rate(v.goodput))
	f.Explanation = "A receiver advertises the free space in its buffer. When the application does not read, the buffer fills with unread data and the window closes to what each read frees; the sender, with a congestion window many times larger, waits. A bigger buffer only postpones it: the application must read faster."
	f.Evidence = []model.Evidence{
		goodputEvidence(v),
		{What: "receiver's advertised window, median and largest", Value: fmt.Sprintf("%s, %s", v.medianWindow.Binary(), v.peerWindow.Binary()), Source: v.source(model.Sender)},
		{What: "samples with the congestion window ≥ 2 × the receiver's window", Value: pct(v.cwndOverRwnd), Source: v.source(model.Sender)},
	}
	if v.recvQOK {
		f.Evidence = append(f.Evidence, model.Evidence{What: "bytes received and not yet read by the application (median)", Value: v.medianRecvQ.Binary(), Source: v.source(model.Receiver)})
	}
	f.Evidence = append(f.Evidence,
		rttEvidence(v))
	if v.limitedOK {
		f.Evidence = append(f.Evidence, limitedEvidence(v))
	}
	if v.zeroWindows > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "samples with a closed window (under two segments)", Value: fmt.Sprintf("%d of %d", v.zeroWindows, v.samples), Source: v.source(model.Sender)})
	}
	f.Fix = []model.Fix{{Where: "application", Kind: "application", Command: "make the receiver read faster: larger reads, less work between reads, a faster disk or a separate writer thread behind it; check its CPU"}}
	f.Effect = fmt.Sprintf("the window can then open to %s, which carries %s at this RTT", v.peerWindow.Binary(),
		rate(model.Bitrate(float64(max(v.streams, 1))*float64(tcpmath.WindowRate(v.peerWindow, v.minRTT)))))
	return f
}

func sndbufLimited(v *view, run *model.Run, o Options) model.Finding {
	f := model.Finding{ID: "sndbuf-limited", Layer: model.LayerHost, Severity: model.Critical, Confidence: model.High}
	now := max(v.sndBuf/2, 64*model.KiB)
	w, r := targetWindow(v, o, now)
	buf := bufferFor(w)
	f.Summary = fmt.Sprintf("The sender's socket buffer limits this transfer: it was full %s of the time.", pct(v.limited.Sndbuf))
	f.Explanation = "A sender keeps every byte in its send buffer until it is acknowledged, so the buffer must hold a bandwidth-delay product. " +
		"Its ceiling is net.ipv4.tcp_wmem's maximum, or a fixed SO_SNDBUF."
	f.Evidence = []model.Evidence{goodputEvidence(v), limitedEvidence(v), rttEvidence(v)}
	if v.sndBuf > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "sender's socket buffer (SO_SNDBUF as granted)", Value: v.sndBuf.Binary(), Source: v.source(model.Sender)})
	}
	if run.Config.Window > 0 {
		f.Fix = []model.Fix{
			{Where: v.senderName(), Kind: "sysctl", Command: fmt.Sprintf("sysctl -w net.core.wmem_max=%d", buf)},
			{Where: "application", Kind: "setsockopt", Command: fmt.Sprintf("setsockopt(SO_SNDBUF, %d), or leave it unset (tcpscope test -w %s, or no -w)", buf, buf.Binary())},
		}
	} else {
		f.Fix = []model.Fix{{Where: v.senderName(), Kind: "sysctl", Command: fmt.Sprintf("sysctl -w net.ipv4.tcp_wmem=\"4096 16384 %d\"", buf)}}
	}
	f.Effect = fmt.Sprintf("a %s send buffer allows about %s", buf.Binary(), rate(r))
	f.Predicted = model.Some(r)
	return f
}

func appLimited(v *view, run *model.Run) model.Finding {
	f := model.Finding{ID: "sender-app-limited", Layer: model.LayerApplication, Severity: model.Warning, Confidence: model.Medium}
	f.Summary = fmt.Sprintf("The sending application did not keep the connection busy: the kernel found it with nothing to send in %s of the samples.", pct(max(v.appLimitedShare, v.limited.App)))
	f.Explanation = "The window had room and the socket had nothing queued: the kernel waited for the application to write. In a memory-to-memory test that means a write-rate cap (-b), a busy CPU, or small writes; in an application it means the data is not produced fast enough."
	f.Evidence = []model.Evidence{goodputEvidence(v),
		{What: "samples in which the kernel marked the sender application-limited", Value: pct(v.appLimitedShare), Source: v.source(model.Sender)}}
	if v.limitedOK {
		f.Evidence = append(f.Evidence, limitedEvidence(v))
	}
	if run.Config.Bitrate > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "write rate asked for (-b)", Value: rate(run.Config.Bitrate)})
		f.Severity, f.Confidence = model.Info, model.High
	}
	f.Fix = []model.Fix{{Where: "application", Kind: "application", Command: "write larger blocks and more often (tcpscope test -l 1M), and check the sender's CPU (top, mpstat)"}}
	return f
}

// pathFull reports whether a queue built up on the path under load: then
// the bottleneck was full, and its losses were the queue overflowing
// (congestion), not what set the rate.
func pathFull(v *view) bool {
	return v.minRTT > 0 && v.srtt-v.minRTT >= max(fullQueueMin, v.minRTT/4)
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

// lossLimited: the congestion window held the sender back and the loss
// explains the rate by the Mathis bound.
func lossLimited(v *view, o Options) (model.Finding, bool) {
	if !v.lossOK || v.loss < lossFloor || v.minRTT <= 0 || v.mss <= 0 {
		return model.Finding{}, false
	}
	c := o.c()
	one := tcpmath.Mathis(v.mss, v.minRTT, v.loss, c)
	bound := model.Bitrate(float64(max(v.streams, 1)) * float64(one))
	ratio := float64(v.goodput) / float64(bound)
	// Loss in bursts costs a loss-based sender one window reduction, or a
	// timeout, for many lost packets: the rate sits above the bound the
	// retransmitted share gives, and the timeouts show where it went.
	bursty := v.cc != "bbr" && v.rtoShare() >= rtoShare
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
		{What: "retransmitted share of bytes sent", Value: fmt.Sprintf("%.4f%% (%d segments)", 100*v.loss, v.retrans), Source: v.source(model.Sender)},
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
	f.Fix = []model.Fix{
		{Where: "path", Kind: "ethtool", Command: "on each host and router interface along the path: ethtool -S IFACE | grep -iE 'err|drop|crc'; ip -s link show IFACE"},
		{Where: "path", Kind: "ethtool", Command: "ethtool IFACE: both ends of every link at the same speed and full duplex"},
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

// bottleneck: nothing in the hosts held the sender back and loss does
// not explain the rate: the path is the limit. Healthy.
func bottleneck(v *view, o Options) model.Finding {
	f := model.Finding{ID: "bottleneck", Layer: model.LayerNetwork, Severity: model.Info, Confidence: model.Medium}
	f.Summary = fmt.Sprintf("The path's bottleneck is the limit: %s, with the hosts not holding the sender back.", rate(v.goodput))
	f.Explanation = "The sender was limited by its congestion window, which follows what the path delivers, not by a buffer or the application. This is how a healthy transfer looks."
	f.Evidence = []model.Evidence{goodputEvidence(v), rttEvidence(v)}
	if v.limitedOK {
		f.Evidence = append(f.Evidence, limitedEvidence(v))
		if v.limited.Cwnd >= limitedShare {
			f.Confidence = model.High
		}
	}
	if v.deliveryMax > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "highest delivery rate the kernel measured", Value: rate(v.deliveryMax), Source: v.source(model.Sender)})
	}
	if o.Target > 0 && float64(v.goodput) < 0.8*float64(o.Target) {
		f.Severity = model.Warning
		f.Summary = fmt.Sprintf("The path delivers %s, below the %s target, and the hosts are not what holds it back.", rate(v.goodput), rate(o.Target))
		f.Explanation += " The target is not met: the bottleneck is slower than expected, or shared with other traffic."
		f.Fix = []model.Fix{{Where: "path", Kind: "tcpscope", Command: "test at different times of day (cross traffic), and with -P 4 (a shared bottleneck gives more streams more)"}}
	}
	return f
}

// stalled: the connection opened but (almost) nothing got through: no
// byte arrived, or the sender spent most of the test in back-to-back
// retransmission timeouts. Small packets (the handshake, ACKs) crossed
// and full-size ones did not: a path-MTU black hole is the usual cause.
func stalled(v *view) (model.Finding, bool) {
	none := v.received == 0 && (v.rtos > 0 || v.retrans > 0)
	stuck := v.rtos >= 3 && v.life > 0 && v.rtoTime*2 >= v.life && v.received < stalledBytes
	// The kernel raises the receiver's rcv_mss to the largest segment
	// that arrived: full-size segments crossed, so what stalled the
	// sender was loss (long bursts of it), not the MTU.
	fullSize := v.rcvMSS > 0 && v.mss > 0 && v.rcvMSS >= v.mss
	if (!none && !stuck) || fullSize {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "pmtu-blackhole", Layer: model.LayerNetwork, Severity: model.Critical, Confidence: model.Medium}
	got := "no data arrived"
	if !none {
		got = fmt.Sprintf("only %s arrived", v.received.Decimal())
	}
	f.Summary = fmt.Sprintf("The connection opened but %s: the sender backed off through %d retransmission timeouts (%v). Full-size packets are being dropped; suspect a path-MTU black hole.",
		got, v.rtos, v.rtoTime.Round(100*time.Millisecond))
	f.Explanation = "The handshake's small packets got through but full-size segments did not, and no ICMP \"fragmentation needed\" came back to lower the sender's MSS. " +
		"A link with a smaller MTU whose router's ICMP is filtered does this. Long bursts of loss can stall a transfer the same way: if small transfers to the same host also stall, it is loss, not the MTU."
	f.Evidence = []model.Evidence{
		{What: "bytes received", Value: v.received.Decimal(), Source: v.source(model.Receiver)},
		{What: "time in retransmission timeouts", Value: v.rtoTime.Round(time.Millisecond).String(), Source: v.source(model.Sender)},
		{What: "retransmission timeouts", Value: fmt.Sprint(v.rtos), Source: v.source(model.Sender)},
		{What: "sender's MSS and path MTU", Value: fmt.Sprintf("%d B, %d B", v.mss, v.pmtu), Source: v.source(model.Sender)},
	}
	if v.rcvMSS > 0 {
		f.Confidence = model.High // no full-size segment arrived: the receiver's own count says so
		f.Evidence = append(f.Evidence, model.Evidence{What: "largest segment the receiver saw (rcv_mss)", Value: v.rcvMSS.Decimal(), Source: v.source(model.Receiver)})
	}
	f.Fix = []model.Fix{
		{Where: v.senderName(), Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_mtu_probing=1 (find the working size after a timeout)"},
		{Where: "path", Kind: "firewall", Command: "let ICMP type 3 code 4 (IPv6: type 2) through the firewalls on the path"},
		{Where: v.senderName(), Kind: "ip", Command: "or lower the MTU: ip link set dev IFACE mtu 1400"},
	}
	return f, true
}

func bufferbloat(v *view, primary model.Finding) (model.Finding, bool) {
	added := v.srtt - v.minRTT
	// A receiver that stops reading delays its window updates, and the
	// RTT samples with them: no queue on the path.
	if primary.ID == "slow-reader" || v.minRTT <= 0 || added < bloatAdded || float64(added) < bloatRatio*float64(v.minRTT) {
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

func sackOff(v *view, primary model.Finding) (model.Finding, bool) {
	if v.opts.SACK {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "sack-off", Layer: model.LayerTransport, Severity: model.Warning, Confidence: model.High}
	if primary.ID == "loss-limited" {
		f.Severity = model.Critical
	}
	f.Summary = "Selective acknowledgments (SACK) are off: after a loss the sender learns of one missing segment per round trip."
	f.Explanation = "With SACK (RFC 2018) the receiver reports every block it holds, so several losses in a window are repaired in one round trip. Without it a loss burst costs a round trip per segment, or a timeout."
	f.Evidence = []model.Evidence{{What: "SACK negotiated", Value: "no", Source: v.source(model.Sender)}}
	f.Fix = []model.Fix{{Where: "both ends", Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_sack=1"}}
	return f, true
}

func timestampsOff(v *view, primary model.Finding) (model.Finding, bool) {
	if v.opts.Timestamps {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "timestamps-off", Layer: model.LayerTransport, Severity: model.Info, Confidence: model.High}
	f.Summary = "TCP timestamps are off: RTT is measured once per window, and wrapped sequence numbers are not guarded on fast paths."
	f.Explanation = "Timestamps (RFC 7323) give an RTT sample with every ACK and protect against wrapped sequence numbers (PAWS), which a 10 Gbit/s flow wraps in under 4 s."
	f.Evidence = []model.Evidence{{What: "timestamps negotiated", Value: "no", Source: v.source(model.Sender)}}
	f.Fix = []model.Fix{{Where: "both ends", Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_timestamps=1"}}
	return f, true
}

func smallMSSRule(v *view, primary model.Finding) (model.Finding, bool) {
	if v.mss == 0 || v.mss >= smallMSS || (v.pmtu > 0 && v.pmtu < 1280) {
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
		{What: "sender's MSS", Value: v.mss.Decimal(), Source: v.source(model.Sender)},
		{What: "path MTU", Value: v.pmtu.Decimal(), Source: v.source(model.Sender)},
	}
	if v.advMSS > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "receiver's advertised MSS", Value: v.advMSS.Decimal(), Source: v.source(model.Receiver)})
	}
	f.Fix = []model.Fix{
		{Where: "both ends", Kind: "ip", Command: "ip route show (an advmss on the route clamps it); iptables -t mangle -S | grep TCPMSS"},
		{Where: "application", Kind: "setsockopt", Command: "do not set TCP_MAXSEG (tcpscope test without -M)"},
	}
	if primary.ID == "loss-limited" {
		f.Severity = model.Critical
		f.Effect = fmt.Sprintf("at %d bytes the loss bound is %.1f× higher", full, float64(full)/float64(v.mss))
	}
	return f, true
}

func rtoStalls(v *view, primary model.Finding) (model.Finding, bool) {
	if v.rtos == 0 || v.life <= 0 {
		return model.Finding{}, false
	}
	share := v.rtoShare()
	if share < rtoShare && v.rtos < 3 {
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
	if !v.opts.SACK {
		f.Fix = append(f.Fix, model.Fix{Where: "both ends", Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_sack=1"})
	}
	return f, true
}

func reordering(v *view, primary model.Finding) (model.Finding, bool) {
	if v.reordSeen < minReorderings && (v.reordSeen == 0 || (v.reordering <= reorderDegree && v.dsack == 0)) {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "reordering", Layer: model.LayerNetwork, Severity: model.Info, Confidence: model.Medium}
	if v.dsack > 0 {
		f.Severity = model.Warning
	}
	f.Summary = fmt.Sprintf("The path reorders packets: the sender saw %d reorderings and now tolerates %d segments out of order.", v.reordSeen, v.reordering)
	f.Explanation = "Packets overtaking each other (parallel links, load balancing per packet, some wireless) look like loss to a sender that counts duplicate ACKs. Linux adapts its threshold and uses RACK, but early retransmissions cost rate; DSACKs show the ones that were spurious."
	f.Evidence = []model.Evidence{
		{What: "reordering events seen", Value: fmt.Sprint(v.reordSeen), Source: v.source(model.Sender)},
		{What: "reordering degree (segments)", Value: fmt.Sprint(v.reordering), Source: v.source(model.Sender)},
		{What: "spurious retransmissions reported by DSACK", Value: fmt.Sprint(v.dsack), Source: v.source(model.Sender)},
	}
	f.Fix = []model.Fix{{Where: "path", Kind: "ip", Command: "find per-packet load balancing (ECMP or bonding in round-robin mode) on the path"}}
	return f, true
}

func zeroWindow(v *view, primary model.Finding) (model.Finding, bool) {
	if v.zeroWindows == 0 || v.samples == 0 {
		return model.Finding{}, false
	}
	f := model.Finding{ID: "zero-window", Layer: model.LayerApplication, Severity: model.Warning, Confidence: model.High}
	if primary.ID == "rwnd-limited" {
		f.Severity = model.Critical
	}
	f.Summary = fmt.Sprintf("The receiving application fell behind: its window was closed in %d of %d samples.", v.zeroWindows, v.samples)
	f.Explanation = "A closed window (zero, or the one scale unit Linux still advertises) means the receiver's buffer is full because the application is not reading; the sender then waits, probing. A bigger buffer only postpones it."
	f.Evidence = []model.Evidence{{What: "samples with a closed window (under two segments)", Value: fmt.Sprintf("%d of %d", v.zeroWindows, v.samples), Source: v.source(model.Sender)}}
	f.Fix = []model.Fix{{Where: "application", Kind: "application", Command: "make the receiver read faster: larger reads, less work per read, a faster disk behind it; check its CPU"}}
	return f, true
}

// lossyPath: loss that did not set the rate (BBR rode over it, or the
// queue overflowed at a full bottleneck) is still worth knowing: a
// loss-based sender on the same path would be held to the Mathis bound.
func lossyPath(v *view, primary model.Finding, o Options) (model.Finding, bool) {
	if primary.ID == "loss-limited" || primary.ID == "pmtu-blackhole" || !v.lossOK || v.loss < lossyShare || v.mss == 0 || v.minRTT <= 0 {
		return model.Finding{}, false
	}
	bound := model.Bitrate(float64(max(v.streams, 1)) * float64(tcpmath.Mathis(v.mss, v.minRTT, v.loss, o.c())))
	f := model.Finding{ID: "lossy-path", Layer: model.LayerNetwork, Severity: model.Warning, Confidence: model.Medium}
	cause := "random loss on the path (errors, a policer, a congested link elsewhere)"
	if pathFull(v) {
		// A queue built up, so some or all of it may be the queue
		// overflowing; the endpoints cannot tell the two apart.
		cause = fmt.Sprintf("the bottleneck's queue overflowing (the RTT rose by %v under load), or errors on the path", (v.srtt - v.minRTT).Round(100*time.Microsecond))
	}
	cc := v.cc
	if cc == "" {
		cc = "the congestion control"
	}
	kept := cc + " kept the rate up; a loss-based sender (cubic, reno) would be held to about " + rate(bound) + " here."
	if v.cc != "bbr" {
		// A loss-based sender above its bound: the losses came few to a
		// window (bursts, or slow start), not spread over the transfer.
		kept = "the rate stayed above the " + rate(bound) + " Mathis bound for loss spread evenly: the losses came clustered."
	}
	f.Summary = fmt.Sprintf("%.3g%% of the bytes sent were retransmitted: %s. %s", 100*v.loss, cause, kept)
	f.Explanation = "The Mathis bound, C·MSS/(RTT·√p), is what a loss-based congestion control averages at loss p. BBR paces at the bottleneck rate it measures and does not treat random loss as congestion, so it can run far above the bound; other flows and hosts on the path may not."
	f.Evidence = []model.Evidence{
		{What: "retransmitted share of bytes sent", Value: fmt.Sprintf("%.4f%% (%d segments)", 100*v.loss, v.retrans), Source: v.source(model.Sender)},
		{What: "congestion control", Value: cc, Source: v.source(model.Sender)},
		{What: fmt.Sprintf("Mathis bound, C = %.2f", o.c()), Value: rate(bound)},
		rttEvidence(v),
	}
	f.Fix = []model.Fix{{Where: "path", Kind: "ethtool", Command: "on each host and router interface along the path: ethtool -S IFACE | grep -iE 'err|drop|crc'; ip -s link show IFACE"}}
	return f, true
}

// jumbo: on a loss-limited path a larger MTU raises the bound linearly.
func jumbo(v *view, primary model.Finding, o Options) (model.Finding, bool) {
	// Bursts take whole flights whatever their packets' size.
	if primary.ID != "loss-limited" || v.pmtu == 0 || v.pmtu > 1500 || v.rtoShare() >= rtoShare {
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
