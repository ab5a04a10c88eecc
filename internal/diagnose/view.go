package diagnose

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// idleQueue: less unsent data than this in the socket, with both windows
// far from full, is a sender with nothing more to send.
const idleQueue = 64 * model.KiB

// view is one data direction of a test as the rules read it: the
// sender's and the receiver's kernel accounts, reduced to the numbers the
// rules compare. A number an end did not measure stays at its zero value
// and its ok flag (or sndKernel, rcvKernel) says so: rules check the flag,
// never the zero.
type view struct {
	dir     model.Direction
	sum     model.DirectionSummary
	sender  model.Side // which end sent
	streams int

	// goodput and received are the summary's; receivedOK is false when
	// neither end's report says what arrived (a black hole's receiver may
	// never report, and a stock iperf3 sender reports no kernel).
	// fromAcks: they come from the sender's kernel's ACKs.
	goodput    model.Bitrate
	received   model.Bytes
	receivedOK bool
	fromAcks   bool
	// sndKernel and rcvKernel say whether the sender's and the
	// receiver's kernel state was read: a stock iperf3 peer's was not,
	// and a rule must not read its absent counters as zeros.
	sndKernel, rcvKernel bool
	// test: a memory-to-memory test (tcpscope or iperf3 at both ends),
	// whose sending application always has data unless -b paces it; a
	// watched socket's application is unknown.
	test bool
	// local: every stream joins two addresses of this host (loopback, or
	// the same address at both ends): there is no path, only the host.
	local bool

	// Shares of the sender's time over the measured period, averaged over
	// its streams; ok is false when the kernel lacks the chrono counters.
	limited   model.Limited
	limitedOK bool

	minRTT time.Duration // the path's round trip without queueing
	srtt   time.Duration // median smoothed RTT over the measured intervals
	mss    model.Bytes   // the sender's MSS
	advMSS model.Bytes   // the receiver's advertised MSS
	rcvMSS model.Bytes   // the largest segment the receiver saw (0 when its end is unknown)
	pmtu   model.Bytes
	// opts are the options negotiated on the connection, from whichever
	// end's kernel was read; optsOK is false when neither was.
	opts   model.Options
	optsOK bool
	cc     string

	// peerWindow is the largest window the receiver advertised, per
	// stream (the largest stream's); windowBound is the sum over streams
	// of window/RTT.
	peerWindow  model.Bytes
	windowOK    bool
	windowBound model.Bitrate
	// rcvBuf and sndBuf are the receiver's and sender's socket buffers as
	// granted at setup (SO_RCVBUF/SO_SNDBUF read back: model.SockBufFor the request).
	rcvBuf, sndBuf model.Bytes
	// rcvSet and sndSet are the receiver's and the sender's TCP buffer
	// settings, as each end read them; nil when an end did not say.
	rcvSet, sndSet *model.TCPSettings
	// zeroWindows counts the sender's samples that saw a closed window.
	zeroWindows, samples int
	// medianWindow is the median window the receiver advertised over the
	// measured samples (the sender's view); cwndOverRwnd the share of
	// those samples in which the sender's congestion window was at least
	// twice it (the seed's "cwnd ≫ rwnd": the receiver, not the network,
	// held it back).
	medianWindow model.Bytes
	cwndOverRwnd float64
	// idleShare is the share of measured samples in which the sender had
	// nothing unsent while both windows had room: its application gave it
	// nothing more, or its send buffer was full (the snapshot cannot
	// tell; the rules decide by the application and the send queue).
	// idleSamples is their count. fullShare and fullSamples count those of
	// them whose send queue held data (at least minUnread): an empty
	// socket is an idle application, never a full buffer.
	idleShare, fullShare     float64
	idleSamples, fullSamples int
	// instants is how many samples those shares are of.
	instants int
	// Over the idle samples: the median bytes in the send queue (sent and
	// unacknowledged, plus unsent), unsent, in flight, and the congestion
	// window; sendQPlateau says the queue stayed near its largest in
	// them all, as a full buffer holds it.
	idleSendQ, idleNotsent, idleFlight, idleCwnd model.Bytes
	sendQPlateau                                 bool
	// overrunShare is the share of measured samples whose send queue
	// held more than the send buffer's size by a margin no healthy writer
	// reaches (overrun); overrunSamples is their count, overrunSendQ and
	// overrunBuf the medians of the queue and the buffer in them.
	overrunShare             float64
	overrunSamples           int
	overrunSendQ, overrunBuf model.Bytes
	// sndBufMax is the largest send buffer sampled over the measured
	// intervals (SO_SNDBUF as autotuning grew it); 0 when none was.
	sndBufMax model.Bytes
	// bufBoundShare is the share of measured samples in which the send
	// buffer held the sender: nothing unsent, the send queue at half
	// the buffer or more (the buffer counts the kernel's overhead, so
	// a full one holds about 0.6 of it in data), and in flight under
	// 90% of both windows; bufBoundSamples is their count.
	bufBoundShare   float64
	bufBoundSamples int
	// medianRecvQ is the median of the receiver's unread bytes (SIOCINQ)
	// over the measured intervals; recvQOK says it was sampled.
	medianRecvQ model.Bytes
	recvQOK     bool
	// The receiver's own account of the window it advertised (rcv_wnd),
	// median and largest, and its RTT estimate (rcv_rtt, median), for a
	// direction whose sender's kernel was not read.
	rcvWndMedian, rcvWndMax model.Bytes
	rcvWndOK                bool
	rcvRTT                  time.Duration
	// rateSpread is the largest over the smallest of the receiver's
	// per-interval goodput over the measured intervals (≥ 3 of them);
	// 0 when not known. Near 1: the rate sat on a plateau.
	rateSpread float64
	// rateFirst and rateLast are the first and last measured intervals'
	// goodput, and rateRises the share of the steps between measured
	// intervals that rose (≥ 3 intervals; 0 when not known).
	rateFirst, rateLast model.Bitrate
	rateRises           float64
	// rcvQuiet is how long before the planned end (or its last
	// interval) no byte arrived at the receiver, the intervals in a row
	// at the end of its account; 0 when the last one carried data.
	rcvQuiet time.Duration

	loss    float64 // retransmitted / sent bytes at the sender
	lossOK  bool
	retrans uint32
	// retransSpread is the share of the measured intervals (≥ 3 of them)
	// that had retransmissions, when any had; 0 when not known. Loss
	// that comes back every interval is sustained (random loss, a
	// policer); loss in one or two is one episode (slow start's
	// overshoot, one outage).
	retransSpread float64
	// retransLow and retransMedian are the fewest and the median
	// retransmissions in one measured interval (≥ 3 intervals); random
	// loss, a Poisson process, keeps every interval near the median.
	retransLow, retransMedian uint32
	// quietTail is how many of the last measured intervals in a row had
	// no retransmissions (≥ 3 intervals measured).
	quietTail int
	// spillOnly: of ≥ 3 measured intervals only the first had
	// retransmissions: slow start's recovery spilling past the omit
	// mark, one episode, and none after it.
	spillOnly bool
	// quietMeasured: ≥ 3 intervals measured and none had a
	// retransmission. The summary's loss can still be above 0: slow
	// start's recovery spills past the omit mark into the interval it
	// ends in, which counts as omitted.
	quietMeasured bool
	// peakRTT is the highest smoothed round trip in any of the sender's
	// samples, slow start's omitted interval included; 0 when none was
	// read. A queue on the path shows in it: a loss-based sender fills
	// a queue before it loses a packet there.
	peakRTT time.Duration
	// rttRise is how far the sender's smoothed round trip rose from the
	// first measured interval to the last (each interval's lowest over
	// the streams, which share the path's queue); 0 when it did not.
	rttRise time.Duration

	rtos       uint32        // retransmission timeouts in the connection's life
	rtoTime    time.Duration // time spent recovering from them, all streams together
	rtoStreams int           // the streams whose counters those are
	reordSeen  uint32
	reordering uint32 // the kernel's reordering degree at the end
	dsack      uint32
	segsOut    uint32 // data segments sent in the connection's life; 0: unknown
	acksIn     uint32 // segments the sender received in its life (its ACKs); 0: unknown

	deliveryMax model.Bitrate // the highest delivery rate measured, the streams' samples summed
	// deliveryPeak is deliveryMax with slow start's omitted intervals
	// and application-limited samples counted too: slow start overshoots
	// to the path's rate before its first loss, so this is a floor of the
	// path's ceiling even when the measured time never reached it again
	// (a window cut by that loss, regrowing).
	deliveryPeak model.Bitrate
	// deliveryFloor is the highest delivery-rate sample, those the kernel
	// marked application-limited included: a rate the path certainly
	// carries (an application-limited sample can only understate it). A
	// buffer-bound sender's samples are all so marked, as its write
	// queue runs empty.
	deliveryFloor model.Bitrate
	maxPacing     model.Bitrate // the sender's SO_MAX_PACING_RATE cap, per stream; 0: none
	duration      time.Duration
	life          time.Duration // the span the sender's RTO counters cover: its last sample, at least duration
}

// views builds one view per direction of the run, in summary order.
func views(run *model.Run) []*view {
	var out []*view
	for _, sum := range run.Summary {
		v := &view{dir: sum.Direction, sum: sum, streams: sum.Streams, duration: sum.Duration.V, life: sum.Duration.V}
		v.goodput, v.received, v.fromAcks = sum.Goodput.V, sum.ReceiverBytes.V, sum.FromAcks
		v.receivedOK = sum.Goodput.OK && sum.ReceiverBytes.OK
		snd, rcv := &run.Client, &run.Remote
		v.sender = model.ClientSide
		if sum.Direction == model.ServerToClient {
			snd, rcv = rcv, snd
			v.sender = model.ServerSide
		}
		v.sndKernel, v.rcvKernel = !snd.NoKernelState, !rcv.NoKernelState
		v.test = run.Config.Duration > 0 || run.Config.Bytes > 0
		v.fill(run, snd, rcv)
		out = append(out, v)
	}
	return out
}

// isLocal reports whether a stream's two addresses are this host's: a
// loopback address, or the same address at both ends.
func isLocal(st model.StreamInfo) bool {
	host := func(s string) (netip.Addr, bool) {
		ap, err := netip.ParseAddrPort(s)
		return ap.Addr().Unmap().WithZone(""), err == nil
	}
	c, ok1 := host(st.ClientAddr)
	s, ok2 := host(st.ServerAddr)
	return ok1 && ok2 && (c == s || (c.IsLoopback() && s.IsLoopback()))
}

// median sorts xs and returns its middle element.
func median[T ~int64 | ~float64](xs []T) T {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// fill reads the direction's numbers from the run: the sockets' setup,
// the sender's and the receiver's final samples, then their intervals.
func (v *view) fill(run *model.Run, snd, rcv *model.EndReport) {
	v.sndSet, v.rcvSet = snd.Settings, rcv.Settings
	ids := v.fillSetup(run)
	var sndStop, rcvStop stops
	if v.test {
		sndStop, rcvStop = stopsOf(run, snd, model.Sender, ids), stopsOf(run, rcv, model.Receiver, ids)
	}
	n := v.fillSenderTotals(snd, ids)
	// A sender's report that never arrived (the test broke off) leaves
	// its kernel unread for this direction, as a stock iperf3 peer does.
	if n == 0 {
		v.sndKernel = false
	}
	// The sender's streams' minimum, corrected for the kernel's
	// millisecond floor (model.EndReport.MinRTT), over the summary's,
	// which a run saved before that correction holds floored.
	if m, ok := v.sum.MinRTT.Get(); ok && m > 0 && v.minRTT == 0 {
		v.minRTT = m
	}
	v.fillReceiverTotals(rcv, ids, n == 0)
	planned := run.Config.Omit + run.Config.Duration // 0 for a byte-count test
	v.fillReceiverIntervals(run, rcv, ids, rcvStop, planned)
	v.fillSenderIntervals(snd, ids, sndStop, planned)
	v.settle()
}

// fillSetup reads the direction's streams: their ids, whether they are
// all local, and the largest buffers each end was granted. It returns
// the ids.
func (v *view) fillSetup(run *model.Run) map[int]bool {
	ids := map[int]bool{}
	v.local = true
	for _, st := range run.Streams {
		if st.Direction != v.dir {
			continue
		}
		ids[st.ID] = true
		v.local = v.local && isLocal(st)
		setupS, setupR := st.Client, st.Server
		if v.sender == model.ServerSide {
			setupS, setupR = setupR, setupS
		}
		if setupR != nil {
			v.rcvBuf = max(v.rcvBuf, setupR.RcvBuf)
		}
		if setupS != nil {
			v.sndBuf = max(v.sndBuf, setupS.SndBuf)
		}
	}
	v.local = v.local && len(ids) > 0
	return ids
}

// stops says when each stream's end stopped, from the omit mark: a
// sender when it stopped writing, a receiver when its last byte arrived.
// A sample taken after it shows the end of the test, not the transfer: a
// sender with nothing more to write looks like an idle application.
type stops map[int]time.Duration

// stopsOf reads the stops of the streams in ids that end played role in.
func stopsOf(run *model.Run, end *model.EndReport, role model.Role, ids map[int]bool) stops {
	out := stops{}
	for _, t := range end.Totals {
		if t.Role == role && ids[t.Stream] && t.Duration > 0 {
			out[t.Stream] = run.Config.Omit + t.Duration
		}
	}
	return out
}

// after reports whether the sample was taken after its stream's end stopped.
func (s stops) after(si *model.StreamInterval) bool {
	at, ok := s[si.Stream]
	return ok && si.TCP.At >= at
}

// fillSenderTotals reads the sender's final samples: the connection's
// setup (MSS, options, congestion control), its chrono shares averaged
// over the streams, and its life's counters. It returns how many
// streams' kernels were read.
func (v *view) fillSenderTotals(snd *model.EndReport, ids map[int]bool) int {
	n := 0
	for i := range snd.Totals {
		t := &snd.Totals[i]
		if t.Role != model.Sender || !ids[t.Stream] || !kernelRead(t.Final) {
			continue
		}
		f := t.Final
		v.life = max(v.life, f.At)
		if n == 0 {
			v.mss, v.pmtu, v.cc = f.SndMSS, f.PMTU, f.Congestion
			v.opts, v.optsOK = f.Options, true
		}
		n++
		if l, ok := t.Limited.Get(); ok {
			v.limited.Rwnd += l.Rwnd
			v.limited.Sndbuf += l.Sndbuf
			v.limited.Cwnd += l.Cwnd
			v.limited.App += l.App
			v.limitedOK = true
		}
		if w, ok := t.MaxSndWnd.Get(); ok {
			v.peerWindow = max(v.peerWindow, w)
			v.windowOK = true
		}
		if p, ok := f.MaxPacingRate.Get(); ok {
			v.maxPacing = max(v.maxPacing, p)
		}
		v.rtos += f.TotalRTO.V
		v.rtoTime += f.TotalRTOTime.V
		v.rtoStreams++
		v.reordSeen += f.ReordSeen.V
		v.reordering = max(v.reordering, f.Reordering)
		v.dsack += f.DSACKDups.V
		v.segsOut += f.DataSegsOut.V
		v.acksIn += f.SegsIn.V
		if m, ok := snd.MinRTT(t.Stream).Get(); ok && m > 0 && (v.minRTT == 0 || m < v.minRTT) {
			v.minRTT = m
		}
	}
	if n > 0 && v.limitedOK {
		k := float64(n)
		v.limited = model.Limited{Rwnd: v.limited.Rwnd / k, Sndbuf: v.limited.Sndbuf / k,
			Cwnd: v.limited.Cwnd / k, App: v.limited.App / k}
	}
	return n
}

// fillReceiverTotals reads the receiver's final samples: the MSS it
// advertised and saw. With onlyReceiver (no sender's kernel was read)
// the first of them also gives the connection's options, MSS and path
// MTU.
func (v *view) fillReceiverTotals(rcv *model.EndReport, ids map[int]bool, onlyReceiver bool) {
	for i := range rcv.Totals {
		t := &rcv.Totals[i]
		if t.Role != model.Receiver || !ids[t.Stream] || !kernelRead(t.Final) {
			continue
		}
		v.advMSS = max(v.advMSS, t.Final.AdvMSS)
		v.rcvMSS = max(v.rcvMSS, t.Final.RcvMSS)
		if onlyReceiver {
			// Only the receiver's end is known (a server's own view
			// of what it received): the options were negotiated for
			// both, and its MSS and path MTU are the connection's.
			v.opts, v.optsOK, v.mss, v.pmtu = t.Final.Options, true, t.Final.RcvMSS, t.Final.PMTU
			onlyReceiver = false
		}
	}
}

// fillReceiverIntervals reads the receiver's samples over the measured
// intervals before planned (0: no planned end): its unread bytes, the
// window it advertised, its RTT estimate, and how far its per-interval
// goodput spread.
func (v *view) fillReceiverIntervals(run *model.Run, rcv *model.EndReport, ids map[int]bool, rcvStop stops, planned time.Duration) {
	var recvQs, rcvWnds []model.Bytes
	var rcvRTTs []time.Duration
	type span struct {
		index int
		len   time.Duration
	}
	var spans []span
	arrived := map[int]model.Bytes{}
	defer func() {
		// The receiver's quiet at the end: the intervals in a row, to
		// the last one before the planned end, in which no byte came.
		for i := len(spans) - 1; i >= 0 && arrived[spans[i].index] == 0; i-- {
			v.rcvQuiet += spans[i].len
		}
	}()
	perInterval := map[int]model.Bitrate{}
	var order []int
	for _, iv := range rcv.Intervals {
		for j := range iv.Streams {
			si := &iv.Streams[j]
			if si.Role != model.Receiver || !ids[si.Stream] {
				continue
			}
			v.rcvMSS = max(v.rcvMSS, si.TCP.RcvMSS) // an end cut short has samples but no totals
			if planned > 0 && iv.Start >= planned {
				continue
			}
			// Every interval to the planned end, the omitted ones too,
			// for the quiet at the end.
			if last, ok := arrived[iv.Index]; !ok {
				spans = append(spans, span{iv.Index, iv.End - iv.Start})
				arrived[iv.Index] = si.Bytes
			} else {
				arrived[iv.Index] = last + si.Bytes
			}
			if iv.Omitted {
				continue
			}
			if run.Config.Interval > 0 && iv.End-iv.Start >= run.Config.Interval/2 {
				if _, ok := perInterval[iv.Index]; !ok {
					order = append(order, iv.Index)
				}
				perInterval[iv.Index] += si.Rate
			}
			if rcvStop.after(si) {
				continue
			}
			if q, ok := si.TCP.RecvQ.Get(); ok {
				recvQs = append(recvQs, q)
			}
			if w, ok := si.TCP.RcvWnd.Get(); ok {
				rcvWnds = append(rcvWnds, w)
			}
			if si.TCP.RcvRTT > 0 {
				rcvRTTs = append(rcvRTTs, si.TCP.RcvRTT)
			}
		}
	}
	if len(recvQs) > 0 {
		v.medianRecvQ, v.recvQOK = median(recvQs), true
	}
	if len(rcvWnds) > 0 {
		v.rcvWndMax = slices.Max(rcvWnds)
		v.rcvWndMedian, v.rcvWndOK = median(rcvWnds), true
	}
	if len(rcvRTTs) > 0 {
		v.rcvRTT = median(rcvRTTs)
	}
	if len(order) >= 3 {
		lo, hi := perInterval[order[0]], perInterval[order[0]]
		for _, k := range order {
			lo, hi = min(lo, perInterval[k]), max(hi, perInterval[k])
		}
		if lo > 0 {
			v.rateSpread = float64(hi) / float64(lo)
		}
		up := 0
		for i := 1; i < len(order); i++ {
			if perInterval[order[i]] > perInterval[order[i-1]] {
				up++
			}
		}
		v.rateFirst, v.rateLast = perInterval[order[0]], perInterval[order[len(order)-1]]
		v.rateRises = float64(up) / float64(len(order)-1)
	}
}

// senderSamples collects the sender's measured samples for the medians
// and shares the view keeps.
type senderSamples struct {
	srtts                         []time.Duration
	wnds                          []model.Bytes
	idleQ, idleNS, idleFl, idleCw []model.Bytes
	overQ, overBuf                []model.Bytes
	over, measured, allMeasured   int
	retransIn                     map[int]uint32 // retransmitted segments per measured interval
	// deliveredIn is the streams' delivery rates summed per measured
	// interval (samples the kernel marked application-limited left
	// out): what the path delivered to the transfer at that moment.
	deliveredIn map[int]model.Bitrate
	// deliveredAll is deliveredIn over every interval, the omitted
	// ones and application-limited samples included.
	deliveredAll map[int]model.Bitrate
	// srttIn is the lowest smoothed RTT over the streams per measured
	// interval, and srttOrder those intervals in the order measured.
	srttIn    map[int]time.Duration
	srttOrder []int
}

// fillSenderIntervals reads the sender's samples before planned (0: no
// planned end): closed windows, retransmissions per interval, and, over
// the measured ones, idle and overrun samples, the window, RTT and
// delivery rate.
func (v *view) fillSenderIntervals(snd *model.EndReport, ids map[int]bool, sndStop stops, planned time.Duration) {
	c := senderSamples{retransIn: map[int]uint32{}, deliveredIn: map[int]model.Bitrate{}, deliveredAll: map[int]model.Bitrate{}, srttIn: map[int]time.Duration{}}
	for _, iv := range snd.Intervals {
		for j := range iv.Streams {
			si := &iv.Streams[j]
			if si.Role != model.Sender || !ids[si.Stream] {
				continue
			}
			if planned > 0 && iv.Start >= planned {
				continue // the drain after the planned end
			}
			v.samples++
			v.life = max(v.life, iv.End)
			v.peakRTT = max(v.peakRTT, si.TCP.RTT)
			if w, ok := si.TCP.SndWnd.Get(); ok && w < closedWindow(si.TCP.SndMSS) {
				v.zeroWindows++
			}
			if !iv.Omitted {
				c.retransIn[iv.Index] += si.RetransSegs
			}
			if d, ok := si.TCP.DeliveryRate.Get(); ok && !sndStop.after(si) {
				// Application-limited samples too: they can only
				// understate what the path carries (a buffer-bound
				// slow start's are all so marked).
				c.deliveredAll[iv.Index] += d
			}
			if iv.Omitted || sndStop.after(si) {
				continue
			}
			v.addMeasured(&c, &si.TCP)
			if rtt := si.TCP.RTT; rtt > 0 {
				if old, ok := c.srttIn[iv.Index]; !ok {
					c.srttIn[iv.Index] = rtt
					c.srttOrder = append(c.srttOrder, iv.Index)
				} else {
					c.srttIn[iv.Index] = min(old, rtt)
				}
			}
			if d, ok := si.TCP.DeliveryRate.Get(); ok && !si.TCP.DeliveryRateAppLimited {
				c.deliveredIn[iv.Index] += d
			}
		}
	}
	for _, d := range c.deliveredIn {
		v.deliveryMax = max(v.deliveryMax, d)
	}
	for _, d := range c.deliveredAll {
		v.deliveryPeak = max(v.deliveryPeak, d)
	}
	v.deliveryPeak = max(v.deliveryPeak, v.deliveryMax)
	if n := len(c.srttOrder); n >= 2 {
		v.rttRise = max(0, c.srttIn[c.srttOrder[n-1]]-c.srttIn[c.srttOrder[0]])
	}
	v.retransPattern(c.retransIn)
	v.settleSender(&c)
}

// addMeasured reads one measured sample of the sender's.
func (v *view) addMeasured(c *senderSamples, tcp *model.Sample) {
	// Nothing queued unsent and both windows far from full: the
	// kernel waited for more data.
	notsent, nsOK := tcp.NotsentBytes.Get()
	wnd, wndOK := tcp.SndWnd.Get()
	if nsOK && notsent < idleQueue && tcp.Unacked*2 < tcp.SndCwnd && (!wndOK || tcp.UnackedBytes()*2 < wnd) {
		v.idleSamples++
		c.idleNS = append(c.idleNS, notsent)
		c.idleFl = append(c.idleFl, tcp.UnackedBytes())
		c.idleCw = append(c.idleCw, tcp.CwndBytes())
		if q, ok := tcp.SendQ.Get(); ok {
			c.idleQ = append(c.idleQ, q)
			if q >= minUnread {
				v.fullSamples++
			}
		}
	}
	if b, ok := tcp.SndBuf.Get(); ok {
		v.sndBufMax = max(v.sndBufMax, b)
		q, qok := tcp.SendQ.Get()
		flight := tcp.UnackedBytes()
		if nsOK && notsent < idleQueue && qok && 2*q >= b && 10*tcp.Unacked < 9*tcp.SndCwnd && (!wndOK || 10*flight < 9*wnd) {
			v.bufBoundSamples++
		}
	}
	if q, b, ok := overrun(tcp); ok {
		v.overrunSamples++
		c.overQ, c.overBuf = append(c.overQ, q), append(c.overBuf, b)
	}
	c.allMeasured++
	if wndOK {
		c.wnds = append(c.wnds, wnd)
		c.measured++
		if tcp.CwndBytes() >= 2*wnd {
			c.over++
		}
	}
	if tcp.RTT > 0 {
		c.srtts = append(c.srtts, tcp.RTT)
	}
	if d, ok := tcp.DeliveryRate.Get(); ok {
		v.deliveryFloor = max(v.deliveryFloor, d)
	}
}

// retransPattern reads how retransmissions spread over the measured
// intervals (at least 3 of them).
func (v *view) retransPattern(retransIn map[int]uint32) {
	if len(retransIn) < 3 {
		return
	}
	with := 0
	for _, n := range retransIn {
		if n > 0 {
			with++
		}
	}
	sorted := slices.Sorted(maps.Values(retransIn))
	v.retransLow, v.retransMedian = sorted[0], sorted[len(sorted)/2]
	if with > 0 {
		v.retransSpread = float64(with) / float64(len(retransIn))
	}
	v.quietMeasured = with == 0
	idx := slices.Sorted(maps.Keys(retransIn))
	for i := len(idx) - 1; i >= 0 && retransIn[idx[i]] == 0; i-- {
		v.quietTail++
	}
	v.spillOnly = with == 1 && retransIn[idx[0]] > 0
}

// settleSender turns the sender's collected samples into the view's
// shares and medians.
func (v *view) settleSender(c *senderSamples) {
	v.instants = c.allMeasured
	if c.allMeasured > 0 {
		v.idleShare = float64(v.idleSamples) / float64(c.allMeasured)
		v.fullShare = float64(v.fullSamples) / float64(c.allMeasured)
		v.overrunShare = float64(v.overrunSamples) / float64(c.allMeasured)
		v.bufBoundShare = float64(v.bufBoundSamples) / float64(c.allMeasured)
	}
	if len(c.overQ) > 0 {
		v.overrunSendQ, v.overrunBuf = median(c.overQ), median(c.overBuf)
	}
	if v.idleSamples > 0 {
		v.idleNotsent, v.idleFlight, v.idleCwnd = median(c.idleNS), median(c.idleFl), median(c.idleCw)
	}
	if len(c.idleQ) > 0 {
		v.idleSendQ = median(c.idleQ)
		var held []model.Bytes // the samples whose queue held data
		for _, q := range c.idleQ {
			if q >= minUnread {
				held = append(held, q)
			}
		}
		v.sendQPlateau = len(held) >= minFullSamples && float64(slices.Min(held)) >= sendQPlateau*float64(slices.Max(held))
	}
	if len(c.wnds) > 0 {
		v.medianWindow = median(c.wnds)
		v.cwndOverRwnd = float64(c.over) / float64(c.measured)
	}
	if len(c.srtts) > 0 {
		v.srtt = median(c.srtts)
	} else {
		v.srtt = v.sum.MeanRTT.V // absent: 0, and rules check minRTT
	}
}

// settle derives what the rest of the view follows from: the RTT when no
// minimum was read, the window bound, and the summary's loss.
func (v *view) settle() {
	if v.minRTT == 0 {
		v.minRTT = v.srtt
	}
	if v.windowOK && v.minRTT > 0 {
		v.windowBound = model.Bitrate(float64(v.streams) * float64(v.peerWindow) * 8 / v.minRTT.Seconds())
	}
	v.retrans = v.sum.RetransSegs.V
	if p, ok := v.sum.LossRate.Get(); ok {
		v.loss, v.lossOK = p, true
	}
}

// kernelRead reports whether a final sample came from a kernel: the
// kernel always says how long its tcp_info is. Results saved before
// no_kernel_state existed carry a zeroed final for a stock iperf3 peer,
// whose options (no SACK, no timestamps) and counters are not its own.
func kernelRead(f *model.Sample) bool { return f != nil && f.KernelLen > 0 }

// closedWindow is the window under which a sender is stopped: under two
// segments, since Linux still advertises one scale unit (1 KiB at scale
// 10) when its buffer is full. The segment is capped at a jumbo frame's:
// loopback's 64 KiB MSS would call a 100 KiB window closed.
func closedWindow(mss model.Bytes) model.Bytes {
	return 2 * min(max(mss, 536), 8960)
}

// source names the sender's or receiver's end for evidence.
func (v *view) source(role model.Role) string {
	side := v.sender
	if role == model.Receiver {
		side = model.ClientSide
		if v.sender == model.ClientSide {
			side = model.ServerSide
		}
	}
	streams := "stream 1"
	if v.streams > 1 {
		streams = fmt.Sprintf("%d streams", v.streams)
	}
	return fmt.Sprintf("%s, %s, %s", side, role, streams)
}

// receiverName and senderName say which machine to change, for fixes.
func (v *view) receiverName() string {
	if v.sender == model.ClientSide {
		return "receiver (the server)"
	}
	return "receiver (this client)"
}

func (v *view) senderName() string {
	if v.sender == model.ClientSide {
		return "sender (this client)"
	}
	return "sender (the server)"
}

// ofDelivery is the transfer's goodput over the highest delivery rate
// the kernel measured (its streams' rates summed at one sample: -P 4
// streams sharing a bottleneck each see the whole path at moments, but
// never all at once), and whether both are known. Near 1 the transfer
// ran at the most the path delivered to it at any moment; well below,
// the path carried more whenever the window let it.
func (v *view) ofDelivery() (float64, bool) {
	if !v.receivedOK || v.deliveryMax <= 0 {
		return 0, false
	}
	return float64(v.goodput) / float64(v.deliveryMax), true
}

// rtoShare is the part of the sender connection's life spent recovering
// from retransmission timeouts.
func (v *view) rtoShare() float64 {
	if v.life <= 0 {
		return 0
	}
	// Each stream's connection spends its own time in timeouts: the
	// share is their average, not their sum over one life.
	return float64(v.rtoTime) / float64(max(v.rtoStreams, 1)) / float64(v.life)
}

// overrun reports a sample whose send queue held more than its send
// buffer's size by half again and more than one 64 KiB write segment
// (the most the kernel's sendmsg adds past a full buffer), with the
// queue and the buffer. A writer the kernel holds at its buffer queues
// up to the buffer's size (of truesize, so somewhat less data); past it
// only when the sender, not paced and on a device that frees its
// packets on transmit (veth, TUN, loopback), pushes out part of the
// write queue's last segment while the application refills it: each
// time the queue falls below the buffer, the congestion window's room
// goes out in a burst. Linux's autotuning sizes the buffer at twice
// the congestion window and more, so a healthy sender never shows it.
func overrun(s *model.Sample) (queue, buf model.Bytes, ok bool) {
	q, qok := s.SendQ.Get()
	b, bok := s.SndBuf.Get()
	if !qok || !bok || b <= 0 {
		return 0, 0, false
	}
	return q, b, float64(q) >= overrunRatio*float64(b) && q >= b+overrunMargin
}
