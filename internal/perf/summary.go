package perf

import (
	"fmt"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Summarize computes the headline of each direction: the receiver's bytes
// over the receiver's time, with the sender's account and the sender's
// kernel counters (retransmissions, RTT) beside it.
func Summarize(run *model.Run) []model.DirectionSummary {
	var out []model.DirectionSummary
	for _, dir := range []model.Direction{model.ClientToServer, model.ServerToClient} {
		ids := run.StreamIDs(dir)
		if len(ids) == 0 {
			continue
		}
		sender, receiver := &run.Client, &run.Remote
		if dir == model.ServerToClient {
			sender, receiver = receiver, sender
		}
		sum := model.DirectionSummary{Direction: dir, Streams: len(ids)}
		var sendDur time.Duration
		var sent, retrans model.Bytes
		retransKnown, sentKnown := true, true
		var rttSum time.Duration
		var rttN int
		for _, t := range sender.Totals {
			if !ids[t.Stream] {
				continue
			}
			sum.SenderBytes += t.Bytes
			sum.RetransSegs += t.RetransSegs
			sendDur = max(sendDur, t.Duration)
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
			if m, ok := t.Final.MinRTT.Get(); ok && m > 0 && (!sum.MinRTT.OK || m < sum.MinRTT.V) {
				sum.MinRTT = model.Some(m)
			}
			if t.Final.RTT > 0 {
				rttSum += t.Final.RTT
				rttN++
			}
		}
		for _, t := range receiver.Totals {
			if ids[t.Stream] {
				sum.ReceiverBytes += t.Bytes
				sum.Duration = max(sum.Duration, t.Duration)
				if t.UDP != nil && sum.UDP == nil {
					c := *t.UDP
					sum.UDP = &c
				} else if t.UDP != nil {
					sum.UDP.Add(t.UDP)
				}
			}
		}
		// The receiver's clock decides the headline; without a receiver's
		// report (the test broke off) fall back to the sender's view.
		if len(receiver.Totals) == 0 {
			sum.ReceiverBytes, sum.Duration = sum.SenderBytes, sendDur
		}
		sum.Goodput = model.RateOf(sum.ReceiverBytes, sum.Duration.Seconds())
		sum.SenderRate = model.RateOf(sum.SenderBytes, sendDur.Seconds())
		if retransKnown && len(sender.Totals) > 0 {
			sum.RetransBytes = model.Some(retrans)
			if sentKnown && sent > 0 {
				sum.LossRate = model.Some(float64(retrans) / float64(sent))
			}
		}
		if rttN > 0 {
			sum.MeanRTT = rttSum / time.Duration(rttN)
		}
		if sum.UDP != nil {
			sum.LossRate = model.Some(sum.UDP.LossRate())
		}
		out = append(out, sum)
	}
	return out
}

// bufferWarnings says when a kernel granted less buffer than -w asked for.
// Linux doubles a SO_SNDBUF/SO_RCVBUF request (the extra half is for its
// bookkeeping) after clamping the request to net.core.wmem_max/rmem_max.
func bufferWarnings(cfg *model.TestConfig, streams []model.StreamInfo) []string {
	if cfg.Window == 0 || len(streams) == 0 {
		return nil
	}
	want := 2 * cfg.Window
	var out []string
	check := func(side string, got model.Bytes, kind, sysctl string) {
		if got < want {
			out = append(out, fmt.Sprintf("%s kernel granted %s %s for a %s request (Linux doubles the request after clamping it at %s, here apparently %s); raise it: sysctl -w %s=%d",
				side, kind, got.Binary(), cfg.Window.Binary(), sysctl, (got/2).Binary(), sysctl, int64(cfg.Window)))
		}
	}
	s := streams[0]
	check("client", s.Client.SndBuf, "SO_SNDBUF", "net.core.wmem_max")
	check("client", s.Client.RcvBuf, "SO_RCVBUF", "net.core.rmem_max")
	check("server", s.Server.SndBuf, "SO_SNDBUF", "net.core.wmem_max")
	check("server", s.Server.RcvBuf, "SO_RCVBUF", "net.core.rmem_max")
	return out
}
