package diagnose

import (
	"fmt"
	"slices"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// idleQueue: less unsent data than this in the socket is an application
// that is not keeping it fed.
const idleQueue = 64 * model.KiB

// view is one data direction of a test as the rules read it: the
// sender's and the receiver's kernel accounts, reduced to the numbers the
// rules compare.
type view struct {
	dir     model.Direction
	sum     model.DirectionSummary
	sender  model.Side // which end sent
	streams int

	// goodput and received are the summary's; ok is false when neither
	// end's report says what arrived (a black hole's receiver may never
	// report). fromAcks: they come from the sender's kernel's ACKs.
	goodput   model.Bitrate
	received  model.Bytes
	goodputOK bool
	fromAcks  bool
	// sndKernel and rcvKernel say whether the sender's and the
	// receiver's kernel state was read: a stock iperf3 peer's was not,
	// and a rule must not read its absent counters as zeros.
	sndKernel, rcvKernel bool

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
	opts   model.Options
	cc     string

	// peerWindow is the largest window the receiver advertised, per
	// stream (the largest stream's); windowBound is the sum over streams
	// of window/RTT.
	peerWindow  model.Bytes
	windowOK    bool
	windowBound model.Bitrate
	// rcvBuf and sndBuf are the receiver's and sender's socket buffers as
	// granted at setup (SO_RCVBUF/SO_SNDBUF read back; Linux doubles).
	rcvBuf, sndBuf model.Bytes
	// zeroWindows counts the sender's samples that saw a closed window
	// (under two segments).
	zeroWindows, samples int
	// medianWindow is the median window the receiver advertised over the
	// measured intervals; cwndOverRwnd the share of those samples in
	// which the sender's congestion window was at least twice it (the
	// seed's "cwnd ≫ rwnd": the receiver, not the network, held it back).
	medianWindow model.Bytes
	cwndOverRwnd float64
	// appLimitedShare is the share of measured samples in which the
	// sender had room in its window and nothing to send: the kernel
	// marked the delivery-rate sample application-limited, or nothing was
	// queued unsent while less than half the window was in flight.
	appLimitedShare float64
	// medianRecvQ is the median of the receiver's unread bytes (SIOCINQ)
	// over the measured intervals; recvQOK says it was sampled.
	medianRecvQ model.Bytes
	recvQOK     bool

	loss    float64 // retransmitted / sent bytes at the sender
	lossOK  bool
	retrans uint32

	rtos       uint32        // retransmission timeouts in the connection's life
	rtoTime    time.Duration // time spent recovering from them
	reordSeen  uint32
	reordering uint32 // the kernel's reordering degree at the end
	dsack      uint32

	deliveryMax model.Bitrate // the highest delivery-rate sample
	maxPacing   model.Bitrate // the sender's SO_MAX_PACING_RATE cap, per stream; 0: none
	duration    time.Duration
	life        time.Duration // the span the sender's RTO counters cover: its last sample, at least duration
}

// views builds one view per direction of the run, in summary order.
func views(run *model.Run) []*view {
	var out []*view
	for _, sum := range run.Summary {
		v := &view{dir: sum.Direction, sum: sum, streams: sum.Streams, duration: sum.Duration.V, life: sum.Duration.V}
		v.goodput, v.received, v.fromAcks = sum.Goodput.V, sum.ReceiverBytes.V, sum.FromAcks
		v.goodputOK = sum.Goodput.OK
		snd, rcv := &run.Client, &run.Remote
		v.sender = model.ClientSide
		if sum.Direction == model.ServerToClient {
			snd, rcv = rcv, snd
			v.sender = model.ServerSide
		}
		v.sndKernel, v.rcvKernel = !snd.NoKernelState, !rcv.NoKernelState
		v.fill(run, snd, rcv)
		out = append(out, v)
	}
	return out
}

func (v *view) fill(run *model.Run, snd, rcv *model.EndReport) {
	ids := map[int]bool{}
	for _, st := range run.Streams {
		if st.Direction == v.dir {
			ids[st.ID] = true
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
	}
	n := 0
	for i := range snd.Totals {
		t := &snd.Totals[i]
		if t.Role != model.Sender || !ids[t.Stream] || t.Final == nil {
			continue
		}
		f := t.Final
		v.life = max(v.life, f.At)
		if n == 0 {
			v.mss, v.pmtu, v.opts, v.cc = f.SndMSS, f.PMTU, f.Options, f.Congestion
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
		v.reordSeen += f.ReordSeen.V
		v.reordering = max(v.reordering, f.Reordering)
		v.dsack += f.DSACKDups.V
		if m, ok := f.MinRTT.Get(); ok && m > 0 && (v.minRTT == 0 || m < v.minRTT) {
			v.minRTT = m
		}
	}
	if n > 0 && v.limitedOK {
		k := float64(n)
		v.limited = model.Limited{Rwnd: v.limited.Rwnd / k, Sndbuf: v.limited.Sndbuf / k,
			Cwnd: v.limited.Cwnd / k, App: v.limited.App / k}
	}
	if m, ok := v.sum.MinRTT.Get(); ok && m > 0 {
		v.minRTT = m
	}
	fromReceiver := n == 0
	for i := range rcv.Totals {
		t := &rcv.Totals[i]
		if t.Role == model.Receiver && ids[t.Stream] && t.Final != nil {
			v.advMSS = max(v.advMSS, t.Final.AdvMSS)
			v.rcvMSS = max(v.rcvMSS, t.Final.RcvMSS)
			if fromReceiver && t.Final.KernelLen > 0 {
				// Only the receiver's end is known (a server's own view
				// of what it received): the options were negotiated for
				// both, and its MSS and path MTU are the connection's.
				v.opts, v.mss, v.pmtu = t.Final.Options, t.Final.RcvMSS, t.Final.PMTU
				fromReceiver = false
			}
		}
	}
	var recvQs []model.Bytes
	for _, iv := range rcv.Intervals {
		for j := range iv.Streams {
			si := &iv.Streams[j]
			if si.Role != model.Receiver || !ids[si.Stream] || iv.Omitted {
				continue
			}
			v.rcvMSS = max(v.rcvMSS, si.TCP.RcvMSS) // an end cut short has samples but no totals
			if q, ok := si.TCP.RecvQ.Get(); ok {
				recvQs = append(recvQs, q)
			}
		}
	}
	if len(recvQs) > 0 {
		slices.Sort(recvQs)
		v.medianRecvQ, v.recvQOK = recvQs[len(recvQs)/2], true
	}

	planned := run.Config.Omit + run.Config.Duration // 0 for a byte-count test
	var srtts []time.Duration
	var wnds []model.Bytes
	over, measured := 0, 0
	appSamples, allMeasured := 0, 0
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
			// Linux advertises no less than one unit of the window scale
			// (1 KiB at scale 10) when its buffer is full: a window under
			// two segments is closed.
			if w, ok := si.TCP.SndWnd.Get(); ok && w < 2*max(si.TCP.SndMSS, 536) {
				v.zeroWindows++
			}
			if iv.Omitted {
				continue
			}
			// Nothing queued and both windows far from full: the kernel
			// waited for the application. The flag alone is one
			// delivery sample's verdict, often stale at sampling time.
			notsent, nsOK := si.TCP.NotsentBytes.Get()
			wnd, wndOK := si.TCP.SndWnd.Get()
			idle := nsOK && notsent < idleQueue && si.TCP.Unacked*2 < si.TCP.SndCwnd &&
				(!wndOK || si.TCP.UnackedBytes()*2 < wnd)
			if si.TCP.DeliveryRateAppLimited || idle {
				appSamples++
			}
			allMeasured++
			if w, ok := si.TCP.SndWnd.Get(); ok {
				wnds = append(wnds, w)
				measured++
				if si.TCP.CwndBytes() >= 2*w {
					over++
				}
			}
			if si.TCP.RTT > 0 {
				srtts = append(srtts, si.TCP.RTT)
			}
			if d, ok := si.TCP.DeliveryRate.Get(); ok && !si.TCP.DeliveryRateAppLimited {
				v.deliveryMax = max(v.deliveryMax, d)
			}
		}
	}
	if allMeasured > 0 {
		v.appLimitedShare = float64(appSamples) / float64(allMeasured)
	}
	if len(wnds) > 0 {
		slices.Sort(wnds)
		v.medianWindow = wnds[len(wnds)/2]
		v.cwndOverRwnd = float64(over) / float64(measured)
	}
	if len(srtts) > 0 {
		slices.Sort(srtts)
		v.srtt = srtts[len(srtts)/2]
	} else {
		v.srtt = v.sum.MeanRTT.V
	}
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

// rtoShare is the part of the sender connection's life spent recovering
// from retransmission timeouts.
func (v *view) rtoShare() float64 {
	if v.life <= 0 {
		return 0
	}
	return float64(v.rtoTime) / float64(v.life)
}
