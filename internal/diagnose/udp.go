package diagnose

import (
	"fmt"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpmath"
)

// Thresholds of the UDP rules (docs/DIAGNOSES.md, "UDP tests").
const (
	// udpShortfall: a sender below this share of the rate asked for could
	// not keep up.
	udpShortfall = 0.95
	// udpLossFloor: below this share of datagrams lost, loss is noise.
	udpLossFloor = 1e-4
	// udpDropsShare: when the receiver's socket dropped at least this
	// share of the lost datagrams, the loss is on the receiving host.
	udpDropsShare = 0.5
	// udpOverShare: loss at least this large, with goodput short of the
	// sending rate by about as much, is a path carrying less than offered
	// (random loss that heavy is rare; below it the two look alike).
	udpOverShare = 0.10
	// udpJitterNote and udpJitterBad: jitter worth a note, and jitter that
	// hurts real-time media (ITU-T G.114's budget leaves tens of ms).
	udpJitterNote = time.Millisecond
	udpJitterBad  = 30 * time.Millisecond
	// udpRefRTT is the round trip at which the loss's meaning for TCP is
	// told (Mathis scales as 1/RTT).
	udpRefRTT = 10 * time.Millisecond
	// udpRcvbufTime is how much of the rate a receive buffer should hold
	// to ride out a receiver's scheduling gaps.
	udpRcvbufTime = 100 * time.Millisecond
)

// datagramTest diagnoses a UDP test: per direction, what lost datagrams
// (the receiving host or the path), whether the sender kept its rate,
// and jitter and reordering.
func datagramTest(run *model.Run, o Options) []model.Finding {
	var out []model.Finding
	for i := range run.Summary {
		s := &run.Summary[i]
		if s.UDP == nil {
			continue
		}
		asked := model.Bitrate(float64(run.Config.Bitrate) * float64(s.Streams))
		fs := datagramFindings(s, asked, run.Config.Window, o)
		for j := range fs {
			fs[j].Direction = s.Direction
		}
		out = append(out, fs...)
	}
	return out
}

// udpDirection is one direction of a UDP test as its rules read it.
type udpDirection struct {
	s      *model.DirectionSummary
	u      *model.Datagrams
	asked  model.Bitrate // the rate asked for, all streams; 0: unpaced
	window model.Bytes   // the buffer asked for with -w; 0: none
	o      Options

	loss           float64 // the share of datagrams lost
	drops          int64   // dropped by the receiver's full buffer
	dropsKnown     bool
	pathLost       int64 // lost on the path: the loss less the drops, when known
	pathLoss       float64
	lossEv, rateEv model.Evidence
}

func newUDPDirection(s *model.DirectionSummary, asked model.Bitrate, window model.Bytes, o Options) *udpDirection {
	d := &udpDirection{s: s, u: s.UDP, asked: asked, window: window, o: o}
	u := d.u
	d.loss = u.LossRate()
	d.drops, d.dropsKnown = u.SocketDrops.Get()
	d.pathLost = u.Lost
	if d.dropsKnown {
		d.pathLost = max(u.Lost-d.drops, 0)
	}
	if u.Packets > 0 {
		d.pathLoss = float64(d.pathLost) / float64(u.Packets)
	}
	d.lossEv = model.Evidence{What: "datagrams lost", Value: fmt.Sprintf("%d of %d (%.3g%%)", u.Lost, u.Packets, 100*d.loss), Source: d.src(model.Receiver)}
	d.rateEv = model.Evidence{What: "goodput and sending rate", Value: fmt.Sprintf("%s, %s", s.Goodput.V, s.SenderRate.V), Source: d.src(model.Receiver)}
	return d
}

// src names the end that played role r, for evidence.
func (d *udpDirection) src(r model.Role) string {
	side := "server"
	if (r == model.Sender) == (d.s.Direction == model.ClientToServer) {
		side = "client"
	}
	return side + ", " + string(r)
}

// datagramFindings: what lost the datagrams (the receiving host, the
// path), or that nothing did, the first of them primary; whether the
// sender kept up; then jitter and reordering.
func datagramFindings(s *model.DirectionSummary, asked model.Bitrate, window model.Bytes, o Options) []model.Finding {
	d := newUDPDirection(s, asked, window, o)
	var out []model.Finding
	hasPrimary := false
	add := func(f *model.Finding, isPrimary bool) {
		if f == nil {
			return
		}
		if isPrimary && !hasPrimary {
			f.Primary, hasPrimary = true, true
		}
		out = append(out, *f)
	}
	add(d.rcvbufOverflow(), true)
	add(d.senderLimited(), !hasPrimary && d.loss < udpLossFloor)
	add(d.lostOnPath(), true)
	if !hasPrimary {
		add(d.clean(), true)
	}
	add(d.jitter(), false)
	add(d.reordering(), false)
	return out
}

// rcvbufOverflow: most of the loss was the receiver's full buffer.
func (d *udpDirection) rcvbufOverflow() *model.Finding {
	s, u := d.s, d.u
	if !d.dropsKnown || d.drops <= 0 || d.loss < udpLossFloor || float64(d.drops) < udpDropsShare*float64(u.Lost) {
		return nil
	}
	need := model.Bytes(s.SenderRate.V.BytesPerSecond() * udpRcvbufTime.Seconds() / float64(max(s.Streams, 1)))
	need = max(need, 4*model.MiB)
	sev := model.Warning
	if d.loss >= 0.01 {
		sev = model.Critical
	}
	// The share is of the loss: the socket's count can pass it, as it
	// counts every datagram it dropped, data or not (a sender's closing
	// datagram, a duplicate the path made), and the loss counts data
	// only. Evidence then says by how much, and the share stops at all.
	share := fmt.Sprintf("%.3g%% of the %d lost", 100*float64(d.drops)/float64(u.Lost), u.Lost)
	if d.drops >= u.Lost {
		share = fmt.Sprintf("all %d lost", u.Lost)
	}
	f := &model.Finding{ID: "udp-rcvbuf-overflow", Layer: model.LayerHost, Severity: sev, Confidence: model.High,
		Summary: fmt.Sprintf("The receiver's socket buffer overflowed: it dropped %d datagrams, %s, on the receiving host and not on the path.",
			d.drops, share),
		Explanation: "A UDP receiver has no flow control: when its application does not read as fast as datagrams arrive, " +
			"the socket's receive buffer fills and the kernel drops the rest (it counts them: SO_RXQ_OVFL). " +
			"A bigger buffer absorbs the receiver's scheduling gaps; a receiver too slow on average needs more CPU or fewer, larger datagrams.",
		Evidence: []model.Evidence{d.lossEv,
			{What: "dropped by the full receive buffer (SO_RXQ_OVFL)", Value: fmt.Sprint(d.drops), Source: d.src(model.Receiver)}, d.rateEv},
		Fix: []model.Fix{
			{Where: "receiver", Kind: "sysctl", Command: fmt.Sprintf("sysctl -w net.core.rmem_max=%d", int64(need))},
			{Where: "receiver", Kind: "setsockopt", Command: fmt.Sprintf("setsockopt(SO_RCVBUF, %d)", int64(need))},
			{Where: "both ends", Kind: "tcpscope", Command: fmt.Sprintf("tcpscope test -u -w %s ...", need.Binary())},
		},
		Effect: fmt.Sprintf("loss falls to what the path itself lost: %.3g%% (%d datagrams)", 100*d.pathLoss, d.pathLost),
	}
	if d.drops > u.Lost {
		f.Evidence = append(f.Evidence, model.Evidence{What: "dropped beyond the datagrams lost: ones that carried no test data (the sender's closing datagrams, duplicates)",
			Value: fmt.Sprint(d.drops - u.Lost), Source: d.src(model.Receiver)})
	}
	if d.window > 0 {
		f.Evidence = append(f.Evidence, model.Evidence{What: "buffer asked for with -w", Value: d.window.Binary(), Source: "test config"})
	}
	return f
}

// senderLimited: the sender fell short of the rate asked for.
func (d *udpDirection) senderLimited() *model.Finding {
	s := d.s
	if d.asked <= 0 || float64(s.SenderRate.V) >= udpShortfall*float64(d.asked) {
		return nil
	}
	return &model.Finding{ID: "udp-sender-limited", Layer: model.LayerHost, Severity: model.Warning, Confidence: model.High,
		Summary: fmt.Sprintf("The sender reached only %s of the %s asked for: the sending host could not keep up.", s.SenderRate.V, d.asked),
		Explanation: "Each datagram costs a system call and a trip through the stack; at high rates a core saturates before the link does. " +
			"Larger datagrams (up to the path MTU), more streams on more cores, or a faster host lift the rate; the path was not tested above what was sent.",
		Evidence: []model.Evidence{{What: "sending rate, asked and reached", Value: fmt.Sprintf("%s, %s", d.asked, s.SenderRate.V), Source: d.src(model.Sender)}},
		Fix: []model.Fix{
			{Where: "sender", Kind: "tcpscope", Command: "tcpscope test -u -l 8K ... (larger datagrams; IP fragments them above the MTU)"},
			{Where: "sender", Kind: "tcpscope", Command: "tcpscope test -u -P 4 ... (streams on more cores)"},
		},
	}
}

// lostOnPath: the path lost datagrams; heavy loss matching the shortfall
// of the goodput is more offered than the path carries.
func (d *udpDirection) lostOnPath() *model.Finding {
	s, pathLoss := d.s, d.pathLoss
	if pathLoss < udpLossFloor {
		return nil
	}
	over := pathLoss >= udpOverShare && float64(s.Goodput.V) < (1-pathLoss/2)*float64(s.SenderRate.V)
	id, summary := "udp-path-loss", fmt.Sprintf("The path lost %.3g%% of the datagrams sent at %s.", 100*pathLoss, s.SenderRate.V)
	expl := "Datagrams went missing between the hosts: a congested queue, a lossy link, or a policer. " +
		"Run again at half the rate: loss that stays is the link's; loss that goes was a queue overflowing. "
	if over {
		id = "udp-over-capacity"
		summary = fmt.Sprintf("More was offered than the path carries: %s sent, %s arrived, %.3g%% lost.", s.SenderRate.V, s.Goodput.V, 100*pathLoss)
		expl = "Loss in proportion to the excess over the goodput is a bottleneck's queue overflowing: the path's capacity is about the goodput. "
	}
	mathis := tcpmath.Mathis(1448, udpRefRTT, pathLoss, d.o.c())
	expl += fmt.Sprintf("TCP would read this loss as congestion: at %.3g%% and a %v round trip, Reno or CUBIC reach at most %s (Mathis), less at longer RTTs.",
		100*pathLoss, udpRefRTT, mathis)
	sev := model.Warning
	if pathLoss >= 0.01 {
		sev = model.Critical
	}
	f := &model.Finding{ID: id, Layer: model.LayerNetwork, Severity: sev, Confidence: model.High,
		Summary: summary, Explanation: expl, Evidence: []model.Evidence{d.lossEv, d.rateEv}}
	if d.dropsKnown {
		f.Evidence = append(f.Evidence, model.Evidence{What: "of which dropped by the receiver's full buffer", Value: fmt.Sprint(d.drops), Source: d.src(model.Receiver)})
	} else {
		// A stock iperf3 receiver does not count its socket's drops:
		// part of the loss may be the receiving host's.
		f.Confidence = model.Medium
		f.Summary += " The receiver's socket drops were not counted: some may have been lost in the receiving host."
	}
	if over {
		f.Fix = []model.Fix{{Where: "sender", Kind: "tcpscope", Command: fmt.Sprintf("tcpscope test -u -b %s ... (at or below the bottleneck)", s.Goodput.V)}}
		f.Effect = fmt.Sprintf("at %s or less the path should carry the stream without this loss", s.Goodput.V)
		f.Predicted = model.Some(s.Goodput.V)
	}
	return f
}

// clean: nothing limited the direction.
func (d *udpDirection) clean() *model.Finding {
	return &model.Finding{ID: "udp-clean", Layer: model.LayerNetwork, Severity: model.Info, Confidence: model.High,
		Summary:     fmt.Sprintf("The path carried %s of datagrams with %.3g%% loss.", d.s.Goodput.V, 100*d.loss),
		Explanation: "Nothing was lost at this rate: the path and both hosts keep up. Raise -b to find where loss begins (the path's capacity).",
		Evidence:    []model.Evidence{d.lossEv, d.rateEv},
	}
}

func (d *udpDirection) jitter() *model.Finding {
	u := d.u
	if u.Jitter < udpJitterNote {
		return nil
	}
	sev := model.Info
	if u.Jitter >= udpJitterBad {
		sev = model.Warning
	}
	return &model.Finding{ID: "udp-jitter", Layer: model.LayerNetwork, Severity: sev, Confidence: model.High,
		Summary: fmt.Sprintf("Datagrams arrived with %.3f ms of jitter.", float64(u.Jitter)/1e6),
		Explanation: "Jitter is the variation of the one-way delay (RFC 3550's smoothed estimate): queues filling and draining, or a busy host. " +
			"Real-time media needs a playout buffer of a few times the jitter, which adds to its delay.",
		Evidence: []model.Evidence{{What: "jitter (RFC 3550)", Value: fmt.Sprintf("%.3f ms", float64(u.Jitter)/1e6), Source: d.src(model.Receiver)}},
	}
}

func (d *udpDirection) reordering() *model.Finding {
	u := d.u
	if u.OutOfOrder <= 0 || u.Packets <= 0 {
		return nil
	}
	return &model.Finding{ID: "udp-reordering", Layer: model.LayerNetwork, Severity: model.Info, Confidence: model.High,
		Summary: fmt.Sprintf("%d datagrams (%.3g%%) arrived out of order.", u.OutOfOrder, 100*float64(u.OutOfOrder)/float64(u.Packets)),
		Explanation: "The path reorders packets (parallel links, load balancing, a wireless hop). " +
			"TCP with RACK tolerates it; older stacks take it for loss and slow down.",
		Evidence: []model.Evidence{{What: "late datagrams", Value: fmt.Sprint(u.OutOfOrder), Source: d.src(model.Receiver)}},
	}
}
