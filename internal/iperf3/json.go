package iperf3

import (
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// WriteJSON writes a run in the shape of iperf3's -J document (the
// client's view), so pipelines that parse iperf3 (perfSONAR and friends)
// take tcpscope's results unchanged: start, intervals from this end's
// samples, and end with both ends' totals, sum_sent from the senders'
// counters and clock, sum_received from the receivers'. A figure neither
// end measured is left out where iperf3 would write a 0 (docs/JSON.md
// lists them); "version" says what wrote it.
func WriteJSON(w io.Writer, run *model.Run) error {
	return writeJSON(w, run, "")
}

// WriteJSONError writes the document of a test that failed, as
// iperf3 -J does: what is known of start, the intervals so far and an
// "error" saying why, so that `jq .error` finds it. run may hold only the
// request (server, config, start time, this end's version and kernel)
// when the test never began.
func WriteJSONError(w io.Writer, run *model.Run, msg string) error {
	return writeJSON(w, run, msg)
}

func writeJSON(w io.Writer, run *model.Run, errMsg string) error {
	doc := map[string]any{
		"start":     startOf(run),
		"intervals": intervalsOf(run),
		"end":       map[string]any{},
	}
	if len(run.Streams) > 0 {
		// iperf3's failed documents have an empty end until streams ran.
		doc["end"] = endOf(run)
	}
	if run.ServerOutput != "" {
		if json.Valid([]byte(run.ServerOutput)) {
			doc["server_output_json"] = json.RawMessage(run.ServerOutput)
		} else {
			doc["server_output_text"] = run.ServerOutput
		}
	}
	if errMsg != "" {
		doc["error"] = errMsg
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "\t")
	return enc.Encode(doc)
}

// WholeTest is run as iperf3 -i 0 reports it: its intervals folded into
// one from the first's start to the last's end (the measured ones, when
// the start was omitted), per stream the bytes and retransmissions
// summed, the rate over the whole span, the last kernel sample (cwnd,
// RTT) and for UDP the datagrams summed with the last jitter. The run
// itself is left as it was.
func WholeTest(run *model.Run) *model.Run {
	ivs := run.Client.Intervals
	for i := range ivs {
		if !ivs[i].Omitted {
			ivs = ivs[i:]
			break
		}
	}
	if len(ivs) <= 1 {
		return run
	}
	first, last := ivs[0], ivs[len(ivs)-1]
	one := model.Interval{Start: first.Start, End: last.End, Omitted: last.Omitted,
		Streams: make([]model.StreamInterval, len(last.Streams))}
	for i, ls := range last.Streams {
		si := model.StreamInterval{Stream: ls.Stream, Role: ls.Role, TCP: ls.TCP}
		for _, iv := range ivs {
			for _, s := range iv.Streams {
				if s.Stream != ls.Stream {
					continue
				}
				si.Bytes += s.Bytes
				si.RetransSegs += s.RetransSegs
				switch {
				case s.UDP == nil:
				case si.UDP == nil:
					d := *s.UDP
					si.UDP = &d
				default:
					si.UDP.Add(s.UDP)
				}
			}
		}
		if si.UDP != nil && ls.UDP != nil {
			si.UDP.Jitter = ls.UDP.Jitter // iperf3's running estimate at the end
		}
		si.Rate = model.RateOf(si.Bytes, (one.End - one.Start).Seconds())
		one.Streams[i] = si
	}
	r := *run
	r.Client.Intervals = []model.Interval{one}
	return &r
}

// socketOf stands in for iperf3's file descriptor numbers: its first
// stream is usually descriptor 5.
func socketOf(stream int) int { return 5 + stream }

// timeLayout is iperf3's timestamp format (strftime's "%a, %d %b %Y %H:%M:%S
// %Z" of gmtime, which names the zone GMT).
const timeLayout = "Mon, 02 Jan 2006 15:04:05 GMT"

func startOf(run *model.Run) map[string]any {
	host, port, _ := net.SplitHostPort(run.Server)
	p, _ := strconv.Atoi(port)
	connected := []map[string]any{}
	for _, s := range run.Streams {
		lh, lp, _ := net.SplitHostPort(s.ClientAddr)
		rh, rp, _ := net.SplitHostPort(s.ServerAddr)
		lpn, _ := strconv.Atoi(lp)
		rpn, _ := strconv.Atoi(rp)
		connected = append(connected, map[string]any{"socket": socketOf(s.ID), "local_host": lh, "local_port": lpn, "remote_host": rh, "remote_port": rpn})
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
		"connected": connected,
		"version":   "tcpscope " + run.Client.Version + " (iperf3 -J shape)",
		"timestamp": map[string]any{"time": run.Start.UTC().Format(timeLayout), "timesecs": run.Start.Unix()},
	}
	if run.Server != "" {
		start["connecting_to"] = map[string]any{"host": host, "port": p}
	}
	if c.Protocol != "" {
		// A request that failed before its defaults were filled in
		// (a bad flag) has no test to describe.
		start["target_bitrate"], start["sock_bufsize"] = int64(c.Bitrate), int64(c.Window)
		start["test_start"] = map[string]any{"protocol": strings.ToUpper(c.Protocol), "num_streams": c.Parallel, "blksize": int64(c.Length),
			"omit": int(c.Omit / time.Second), "duration": int(c.Duration / time.Second), "bytes": int64(c.Bytes), "blocks": 0,
			"reverse": reverse, "tos": 0, "target_bitrate": int64(c.Bitrate), "bidir": bidir, "fqrate": int64(c.FQRate),
			"interval": c.Interval.Seconds()}
	}
	if run.Client.Kernel != "" {
		// iperf3 prints uname's system, node, release, version and
		// machine; tcpscope records the release of its Linux kernel.
		start["system_info"] = "Linux " + run.Client.Kernel
	}
	if run.Cookie != "" {
		start["cookie"] = run.Cookie
	}
	if len(run.Streams) > 0 && run.Streams[0].Client != nil {
		s := run.Streams[0].Client
		start["sndbuf_actual"] = int64(s.SndBuf)
		start["rcvbuf_actual"] = int64(s.RcvBuf)
		// As iperf3: the MSS asked for (-M) as tcp_mss, else the
		// socket's as tcp_mss_default.
		switch {
		case run.Config.MSS > 0 && !run.Config.IsUDP():
			start["tcp_mss"] = run.Config.MSS
		case s.MSS > 0:
			start["tcp_mss_default"] = s.MSS
		}
	}
	return start
}

// intervalsOf is this end's intervals: per stream, and summed per
// direction (sum for the client's first direction, sum_bidir_reverse for
// the other in --bidir).
func intervalsOf(run *model.Run) []map[string]any {
	dirOf := map[int]model.Direction{}
	for _, s := range run.Streams {
		dirOf[s.ID] = s.Direction
	}
	first := firstDirection(run)
	out := []map[string]any{}
	for _, iv := range run.Client.Intervals {
		start, end := iv.Start.Seconds(), iv.End.Seconds()
		secs := end - start
		var streams []map[string]any
		sums := map[model.Direction]map[string]any{}
		for _, si := range iv.Streams {
			sender := si.Role == model.Sender
			s := map[string]any{"socket": socketOf(si.Stream), "start": start, "end": end, "seconds": secs,
				"bytes": int64(si.Bytes), "bits_per_second": float64(si.Rate), "omitted": iv.Omitted, "sender": sender}
			if si.UDP != nil {
				udpFields(s, si.UDP, sender, true)
			} else if sender {
				s["retransmits"] = si.RetransSegs
				s["snd_cwnd"] = int64(si.TCP.CwndBytes())
				if w, ok := si.TCP.SndWnd.Get(); ok {
					s["snd_wnd"] = int64(w)
				}
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
				udpFields(sum, acc, sum["sender"].(bool), true)
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

// firstDirection is the direction iperf3 sums as "sum": the client's
// first streams' (the other, in --bidir, is "_bidir_reverse").
func firstDirection(run *model.Run) model.Direction {
	if run.Config.Reverse {
		return model.ServerToClient
	}
	return model.ClientToServer
}

// totalOf is end e's total of stream id, or nil when e did not report it.
func totalOf(e *model.EndReport, id int) *model.StreamTotal {
	for i := range e.Totals {
		if e.Totals[i].Stream == id {
			return &e.Totals[i]
		}
	}
	return nil
}

// rttStats is iperf3's min_rtt and mean_rtt of a sender's stream: the
// smallest and the mean smoothed RTT (tcpi_rtt) over the interval samples
// of the end that sent it.
func rttStats(e *model.EndReport, id int) (lo, mean time.Duration, ok bool) {
	var sum time.Duration
	n := 0
	for _, iv := range e.Intervals {
		for _, si := range iv.Streams {
			if si.Stream != id || si.UDP != nil || si.TCP.KernelLen == 0 {
				continue
			}
			if n == 0 || si.TCP.RTT < lo {
				lo = si.TCP.RTT
			}
			sum += si.TCP.RTT
			n++
		}
	}
	if n == 0 {
		return 0, 0, false
	}
	return lo, sum / time.Duration(n), true
}

// half is one end's account of a stream in iperf3's end.streams: what
// the end reported, nothing where it reported nothing.
func half(e *model.EndReport, t *model.StreamTotal, id int) map[string]any {
	h := map[string]any{"socket": socketOf(id), "start": 0.0}
	if t == nil {
		return h
	}
	h["end"], h["seconds"], h["bytes"], h["bits_per_second"] = t.Duration.Seconds(), t.Duration.Seconds(), int64(t.Bytes), float64(t.Rate)
	if t.Role != model.Sender || t.UDP != nil {
		return h
	}
	// Only what the end measured: a stock iperf3 peer's kernel figures
	// are absent, not zero.
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
	if lo, mean, ok := rttStats(e, id); ok {
		h["min_rtt"], h["mean_rtt"] = lo.Microseconds(), mean.Microseconds()
	}
	unmeasured(h, "max_snd_cwnd", "max_snd_wnd", "max_rtt", "min_rtt", "mean_rtt")
	return h
}

// unmeasured writes each of keys that h lacks as iperf3 writes a figure
// nobody measured, 0, so parsers of iperf3's document find every key its
// own has; and lists them in h's "tcpscope_unmeasured", so a reader that
// knows tcpscope can tell such a 0 from a measured one.
func unmeasured(h map[string]any, keys ...string) {
	var none []string
	for _, k := range keys {
		if _, ok := h[k]; !ok {
			h[k] = 0
			none = append(none, k)
		}
	}
	if len(none) > 0 {
		h["tcpscope_unmeasured"] = none
	}
}

// ends is the sending and receiving ends of a stream flowing in d.
func ends(run *model.Run, d model.Direction) (snd, rcv *model.EndReport) {
	if d == model.ServerToClient {
		return &run.Remote, &run.Client
	}
	return &run.Client, &run.Remote
}

// endOf is iperf3's "end" of a run: its streams, the sums of each
// direction, CPU use and congestion control.
func endOf(run *model.Run) map[string]any {
	end := map[string]any{"streams": endStreams(run), "cpu_utilization_percent": cpuOf(run)}
	first := firstDirection(run)
	for _, d := range run.Summary {
		suffix := ""
		if d.Direction != first {
			suffix = "_bidir_reverse"
		}
		sent, recv := sums(run, &d)
		if d.UDP != nil {
			end["sum"+suffix] = legacySum(sent, recv, d.Direction == model.ClientToServer)
			// In UDP sums iperf3's "sender" names the side of the
			// account, not this host's role.
			sent["sender"], recv["sender"] = true, false
		}
		end["sum_sent"+suffix], end["sum_received"+suffix] = sent, recv
	}
	if !run.Config.IsUDP() {
		congestion(run, end)
	}
	if len(run.Diagnosis) > 0 {
		// Not iperf3's; parsers ignore keys they do not know.
		end["tcpscope_diagnosis"] = run.Diagnosis
	}
	return end
}

// endStreams is the end's entry for each stream: the sender's and the
// receiver's halves, or one UDP entry.
func endStreams(run *model.Run) []map[string]any {
	var streams []map[string]any
	for _, s := range run.Streams {
		sndEnd, rcvEnd := ends(run, s.Direction)
		snd, rcv := totalOf(sndEnd, s.ID), totalOf(rcvEnd, s.ID)
		// "sender" says whether this host (the client) sends the stream.
		mine := s.Direction == model.ClientToServer
		if run.Config.IsUDP() {
			streams = append(streams, map[string]any{"udp": udpStream(rcvEnd, snd, rcv, s.ID, mine)})
			continue
		}
		sh, rh := half(sndEnd, snd, s.ID), half(rcvEnd, rcv, s.ID)
		sh["sender"], rh["sender"] = mine, mine
		streams = append(streams, map[string]any{"sender": sh, "receiver": rh})
	}
	return streams
}

// sums is iperf3's sum_sent and sum_received of direction d: what was
// measured of it, each figure absent when it was not.
func sums(run *model.Run, d *model.DirectionSummary) (sent, recv map[string]any) {
	mine := d.Direction == model.ClientToServer
	sndEnd, _ := ends(run, d.Direction)
	sent = map[string]any{"start": 0.0, "sender": mine}
	if b, ok := d.SenderBytes.Get(); ok {
		secs := senderTime(run, sndEnd, d.Direction).Seconds()
		sent["end"], sent["seconds"], sent["bytes"], sent["bits_per_second"] = secs, secs, int64(b), float64(d.SenderRate.V)
	}
	if n, ok := d.RetransSegs.Get(); ok && d.UDP == nil {
		sent["retransmits"] = n
	}
	recv = map[string]any{"start": 0.0, "sender": mine}
	if b, ok := d.ReceiverBytes.Get(); ok {
		secs := d.Duration.V.Seconds()
		recv["end"], recv["seconds"], recv["bytes"], recv["bits_per_second"] = secs, secs, int64(b), float64(d.Goodput.V)
		if d.FromAcks {
			// Not iperf3's: the receiver's report is missing, and
			// these are the bytes it acknowledged to the sender.
			recv["tcpscope_from_acks"] = true
		}
	}
	if u := d.UDP; u != nil {
		// The direction's datagrams: the sender's count, and the
		// receiver's loss and jitter in both sums (iperf3 writes
		// zeros into sum_sent's, where tcpscope knows them).
		if n, ok := sentDatagrams(run, sndEnd, d.Direction); ok {
			sent["packets"] = n
		}
		udpFields(sent, u, false, false)
		udpFields(recv, u, false, true)
	}
	return sent, recv
}

// legacySum is iperf3's legacy UDP "sum", which mixes both: the sender's
// bytes and rate, the receiver's time and datagram account.
func legacySum(sent, recv map[string]any, mine bool) map[string]any {
	legacy := map[string]any{"start": 0.0, "sender": mine}
	for _, k := range []string{"end", "seconds", "jitter_ms", "lost_packets", "packets", "lost_percent"} {
		if v, ok := recv[k]; ok {
			legacy[k] = v
		}
	}
	for _, k := range []string{"bytes", "bits_per_second"} {
		if v, ok := sent[k]; ok {
			legacy[k] = v
		}
	}
	return legacy
}

// congestion names a TCP run's congestion control in end as iperf3 -c
// does: the algorithm of the end that sends, and of the one that
// receives (in --bidir, of the reverse direction: the server sends).
func congestion(run *model.Run, end map[string]any) {
	snd, rcv := congestionOf(run, model.ClientSide), congestionOf(run, model.ServerSide)
	if run.Config.Reverse || run.Config.Bidir {
		snd, rcv = rcv, snd
	}
	if snd != "" {
		end["sender_tcp_congestion"] = snd
	}
	if rcv != "" {
		end["receiver_tcp_congestion"] = rcv
	}
}

// udpStream is iperf3's one entry per UDP stream: the sender's bytes,
// time and datagrams, the receiver's loss, jitter and late datagrams.
func udpStream(rcvEnd *model.EndReport, snd, rcv *model.StreamTotal, id int, mine bool) map[string]any {
	h := map[string]any{"socket": socketOf(id), "start": 0.0, "sender": mine}
	if snd != nil {
		h["end"], h["seconds"], h["bytes"], h["bits_per_second"] = snd.Duration.Seconds(), snd.Duration.Seconds(), int64(snd.Bytes), float64(snd.Rate)
		if snd.UDP != nil {
			h["packets"] = snd.UDP.Packets
		}
	}
	if rcv != nil && rcv.UDP != nil {
		udpFields(h, rcv.UDP, false, false)
		if _, ok := h["packets"]; !ok {
			h["packets"] = rcv.UDP.Packets
		}
		if !rcvEnd.NoKernelState {
			// iperf3's results carry no count of late datagrams: only
			// a tcpscope receiver knows it.
			h["out_of_order"] = rcv.UDP.OutOfOrder
		}
		unmeasured(h, "out_of_order")
	}
	return h
}

// senderTime is the longest sender duration of direction d, iperf3's
// sender_time.
func senderTime(run *model.Run, e *model.EndReport, d model.Direction) time.Duration {
	ids := run.StreamIDs(d)
	var longest time.Duration
	for _, t := range e.Totals {
		if ids[t.Stream] && t.Role == model.Sender {
			longest = max(longest, t.Duration)
		}
	}
	return longest
}

// sentDatagrams is the datagrams the senders of direction d sent.
func sentDatagrams(run *model.Run, e *model.EndReport, d model.Direction) (int64, bool) {
	ids := run.StreamIDs(d)
	var n int64
	found := false
	for _, t := range e.Totals {
		if ids[t.Stream] && t.Role == model.Sender && t.UDP != nil {
			n += t.UDP.Packets
			found = true
		}
	}
	return n, found
}

// congestionOf is the congestion control an end's sockets used, as read
// back from them or as a stock iperf3 peer reported it; "" when unknown.
func congestionOf(run *model.Run, side model.Side) string {
	e := &run.Client
	if side == model.ServerSide {
		e = &run.Remote
	}
	if e.Congestion != "" {
		return e.Congestion
	}
	for _, s := range run.Streams {
		setup := s.Client
		if side == model.ServerSide {
			setup = s.Server
		}
		if setup != nil && setup.Congestion != "" {
			return setup.Congestion
		}
	}
	for _, t := range e.Totals {
		if t.Final != nil && t.Final.Congestion != "" {
			return t.Final.Congestion
		}
	}
	return ""
}

// cpuOf is iperf3's cpu_utilization_percent: this process's (host_*)
// and the server's (remote_*), each left out when that end did not
// report it.
func cpuOf(run *model.Run) map[string]any {
	out := map[string]any{}
	for prefix, u := range map[string]*model.CPUUse{"host_": run.Client.CPU, "remote_": run.Remote.CPU} {
		if u != nil {
			out[prefix+"total"], out[prefix+"user"], out[prefix+"system"] = u.Total, u.User, u.System
		}
	}
	return out
}

// udpFields adds iperf3's datagram keys: the count, and for a receiver's
// account its jitter (ms), loss and, when withCount, the datagrams.
func udpFields(m map[string]any, d *model.Datagrams, sender, withCount bool) {
	if withCount {
		m["packets"] = d.Packets
	}
	if sender {
		return
	}
	m["jitter_ms"] = float64(d.Jitter) / 1e6
	m["lost_packets"] = d.Lost
	m["lost_percent"] = 100 * d.LossRate()
}
