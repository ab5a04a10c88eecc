package report

import (
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// WriteIperf3JSON writes a run in the shape of iperf3's -J document (the
// client's view), so pipelines that parse iperf3 (perfSONAR and friends)
// take tcpscope's results unchanged: start, intervals from this end's
// samples, and end with both ends' totals, sum_sent from the senders'
// counters and clock, sum_received from the receivers'. Fields iperf3
// fills from its own process (CPU use) are zero; "version" says what
// wrote it.
func WriteIperf3JSON(w io.Writer, run *model.Run) error {
	doc := map[string]any{
		"start":     i3Start(run),
		"intervals": i3Intervals(run),
		"end":       i3End(run),
	}
	if run.ServerOutput != "" {
		if json.Valid([]byte(run.ServerOutput)) {
			doc["server_output_json"] = json.RawMessage(run.ServerOutput)
		} else {
			doc["server_output_text"] = run.ServerOutput
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "\t")
	return enc.Encode(doc)
}

// i3Socket stands in for iperf3's file descriptor numbers: its first
// stream is usually descriptor 5.
func i3Socket(stream int) int { return 5 + stream }

func i3Start(run *model.Run) map[string]any {
	host, port, _ := net.SplitHostPort(run.Server)
	p, _ := strconv.Atoi(port)
	var connected []map[string]any
	for _, s := range run.Streams {
		lh, lp, _ := net.SplitHostPort(s.ClientAddr)
		rh, rp, _ := net.SplitHostPort(s.ServerAddr)
		lpn, _ := strconv.Atoi(lp)
		rpn, _ := strconv.Atoi(rp)
		connected = append(connected, map[string]any{"socket": i3Socket(s.ID), "local_host": lh, "local_port": lpn, "remote_host": rh, "remote_port": rpn})
	}
	c := run.Config
	bidir, reverse := 0, 0
	if c.Bidir {
		bidir = 1
	}
	if c.Reverse {
		reverse = 1
	}
	start := map[string]any{
		"connected":     connected,
		"version":       "tcpscope " + run.Client.Version + " (iperf3 -J shape)",
		"system_info":   run.Client.Kernel,
		"timestamp":     map[string]any{"time": run.Start.UTC().Format(time.RFC1123), "timesecs": run.Start.Unix()},
		"connecting_to": map[string]any{"host": host, "port": p},
		"sock_bufsize":  int64(c.Window),
		"test_start": map[string]any{"protocol": strings.ToUpper(c.Protocol), "num_streams": c.Parallel, "blksize": int64(c.Length),
			"omit": int(c.Omit / time.Second), "duration": int(c.Duration / time.Second), "bytes": int64(c.Bytes), "blocks": 0,
			"reverse": reverse, "tos": 0, "target_bitrate": int64(c.Bitrate), "bidir": bidir, "fqrate": int64(c.FQRate),
			"interval": c.Interval.Seconds()},
	}
	if len(run.Streams) > 0 {
		start["sndbuf_actual"] = int64(run.Streams[0].Client.SndBuf)
		start["rcvbuf_actual"] = int64(run.Streams[0].Client.RcvBuf)
		if mss := run.Streams[0].Client.MSS; mss > 0 {
			start["tcp_mss_default"] = mss
		}
	}
	return start
}

// i3Intervals is this end's intervals: per stream, and summed per
// direction (sum for the client's first direction, sum_bidir_reverse for
// the other in --bidir).
func i3Intervals(run *model.Run) []map[string]any {
	dirOf := map[int]model.Direction{}
	for _, s := range run.Streams {
		dirOf[s.ID] = s.Direction
	}
	first := model.ClientToServer
	if run.Config.Reverse {
		first = model.ServerToClient
	}
	var out []map[string]any
	for _, iv := range run.Client.Intervals {
		start, end := iv.Start.Seconds(), iv.End.Seconds()
		secs := end - start
		var streams []map[string]any
		sums := map[model.Direction]map[string]any{}
		for _, si := range iv.Streams {
			sender := si.Role == model.Sender
			s := map[string]any{"socket": i3Socket(si.Stream), "start": start, "end": end, "seconds": secs,
				"bytes": int64(si.Bytes), "bits_per_second": float64(si.Rate), "omitted": iv.Omitted, "sender": sender}
			if si.UDP != nil {
				udpFields(s, si.UDP, sender)
			} else if sender {
				s["retransmits"] = si.RetransSegs
				s["snd_cwnd"] = int64(si.TCP.CwndBytes())
				s["snd_wnd"] = int64(si.TCP.SndWnd.V)
				s["rtt"] = si.TCP.RTT.Microseconds()
				s["rttvar"] = si.TCP.RTTVar.Microseconds()
				s["pmtu"] = int64(si.TCP.PMTU)
			}
			streams = append(streams, s)
			d := dirOf[si.Stream]
			sum := sums[d]
			if sum == nil {
				sum = map[string]any{"start": start, "end": end, "seconds": secs, "bytes": int64(0), "bits_per_second": 0.0, "omitted": iv.Omitted, "sender": sender}
				if sender && si.UDP == nil {
					sum["retransmits"] = uint32(0)
				}
				sums[d] = sum
			}
			if si.UDP != nil {
				acc, _ := sum["udp"].(*model.Datagrams)
				if acc == nil {
					acc = &model.Datagrams{}
					sum["udp"] = acc
				}
				acc.Add(si.UDP)
			}
			sum["bytes"] = sum["bytes"].(int64) + int64(si.Bytes)
			if secs > 0 {
				sum["bits_per_second"] = float64(sum["bytes"].(int64)) * 8 / secs
			}
			if sender && si.UDP == nil {
				sum["retransmits"] = sum["retransmits"].(uint32) + si.RetransSegs
			}
		}
		o := map[string]any{"streams": streams}
		for d, sum := range sums {
			if acc, ok := sum["udp"].(*model.Datagrams); ok {
				delete(sum, "udp")
				udpFields(sum, acc, sum["sender"].(bool))
			}
			if d == first {
				o["sum"] = sum
			} else {
				o["sum_bidir_reverse"] = sum
			}
		}
		out = append(out, o)
	}
	return out
}

func i3End(run *model.Run) map[string]any {
	totals := func(e *model.EndReport, id int) *model.StreamTotal {
		for i := range e.Totals {
			if e.Totals[i].Stream == id {
				return &e.Totals[i]
			}
		}
		return nil
	}
	half := func(t *model.StreamTotal, id int) map[string]any {
		h := map[string]any{"socket": i3Socket(id), "start": 0.0, "end": 0.0, "seconds": 0.0, "bytes": int64(0), "bits_per_second": 0.0}
		if t == nil {
			return h
		}
		h["end"], h["seconds"], h["bytes"], h["bits_per_second"] = t.Duration.Seconds(), t.Duration.Seconds(), int64(t.Bytes), float64(t.Rate)
		if t.Role == model.Sender && t.UDP == nil {
			// Only what the end measured: a stock iperf3 peer's kernel
			// figures are absent, not zero.
			if n, ok := t.RetransSegs.Get(); ok {
				h["retransmits"] = n
			}
			if c, ok := t.MaxCwnd.Get(); ok {
				h["max_snd_cwnd"] = int64(c)
			}
			if w, ok := t.MaxSndWnd.Get(); ok {
				h["max_snd_wnd"] = int64(w)
			}
			if r, ok := t.MaxRTT.Get(); ok {
				h["max_rtt"] = r.Microseconds()
			}
			if f := t.Final; f != nil {
				if m, ok := f.MinRTT.Get(); ok {
					h["min_rtt"] = m.Microseconds()
				}
				h["mean_rtt"] = f.RTT.Microseconds()
			}
		}
		return h
	}
	var streams []map[string]any
	udp := run.Config.IsUDP()
	for _, s := range run.Streams {
		cl, sv := totals(&run.Client, s.ID), totals(&run.Remote, s.ID)
		snd, rcv := cl, sv
		if s.Direction == model.ServerToClient {
			snd, rcv = sv, cl
		}
		if udp {
			// One entry per stream, as iperf3's: this host's bytes, the
			// receiver's datagram account.
			mine := snd
			if s.Direction == model.ServerToClient {
				mine = rcv
			}
			h := half(mine, s.ID)
			h["sender"] = s.Direction == model.ClientToServer
			if rcv != nil && rcv.UDP != nil {
				udpFields(h, rcv.UDP, false)
				h["out_of_order"] = rcv.UDP.OutOfOrder
			}
			streams = append(streams, map[string]any{"udp": h})
			continue
		}
		sh, rh := half(snd, s.ID), half(rcv, s.ID)
		// "sender" says whether the half is this host's (the client's).
		sh["sender"] = s.Direction == model.ClientToServer
		rh["sender"] = s.Direction == model.ClientToServer
		streams = append(streams, map[string]any{"sender": sh, "receiver": rh})
	}
	end := map[string]any{"streams": streams,
		"cpu_utilization_percent": map[string]any{"host_total": 0.0, "host_user": 0.0, "host_system": 0.0,
			"remote_total": 0.0, "remote_user": 0.0, "remote_system": 0.0}}
	first := model.ClientToServer
	if run.Config.Reverse {
		first = model.ServerToClient
	}
	for _, d := range run.Summary {
		secs := d.Duration.V.Seconds()
		mine := d.Direction == model.ClientToServer
		sent := map[string]any{"start": 0.0, "end": secs, "seconds": secs, "sender": mine}
		if b, ok := d.SenderBytes.Get(); ok {
			sent["bytes"], sent["bits_per_second"] = int64(b), float64(d.SenderRate.V)
		}
		if n, ok := d.RetransSegs.Get(); ok {
			sent["retransmits"] = n
		}
		recv := map[string]any{"start": 0.0, "end": secs, "seconds": secs, "sender": mine}
		if b, ok := d.ReceiverBytes.Get(); ok {
			recv["bytes"], recv["bits_per_second"] = int64(b), float64(d.Goodput.V)
		}
		suffix := ""
		if d.Direction != first {
			suffix = "_bidir_reverse"
		}
		if d.UDP != nil {
			delete(sent, "retransmits")
			udpFields(sent, &model.Datagrams{Packets: d.UDP.Packets}, true)
			udpFields(recv, d.UDP, false)
			// iperf3's legacy "sum": the receiver's account.
			legacy := map[string]any{}
			for k, v := range recv {
				legacy[k] = v
			}
			if suffix == "" {
				end["sum"] = legacy
			} else {
				end["sum_bidir_reverse"] = legacy
			}
		}
		end["sum_sent"+suffix], end["sum_received"+suffix] = sent, recv
	}
	for _, t := range run.Client.Totals {
		key := "receiver_tcp_congestion"
		if t.Role == model.Sender {
			key = "sender_tcp_congestion"
		}
		if t.Final != nil && t.Final.Congestion != "" {
			end[key] = t.Final.Congestion
		}
	}
	if len(run.Diagnosis) > 0 {
		// Not iperf3's; parsers ignore keys they do not know.
		end["tcpscope_diagnosis"] = run.Diagnosis
	}
	return end
}

// udpFields adds iperf3's datagram keys: a sender's count, or a
// receiver's jitter (ms), loss and count.
func udpFields(m map[string]any, d *model.Datagrams, sender bool) {
	m["packets"] = d.Packets
	if sender {
		return
	}
	m["jitter_ms"] = float64(d.Jitter) / 1e6
	m["lost_packets"] = d.Lost
	m["lost_percent"] = 100 * d.LossRate()
}
