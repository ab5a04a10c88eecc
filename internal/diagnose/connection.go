package diagnose

import (
	"github.com/tcpscope/tcpscope/internal/model"
)

// Connection diagnoses one socket watched from outside its process: a
// series of its kernel samples (oldest first, from sock_diag), one end
// only. The end that moved more data decides the direction: a sending
// socket gets every sender rule (the chrono counters, windows, loss, RTT);
// a receiving one what its own samples show (unread data, options). The
// findings read "client" for the watched socket's end. At least two
// samples are needed; with fewer it returns nil.
func Connection(series []model.Sample, o Options) []model.Finding {
	if len(series) < 2 {
		return nil
	}
	return Test(ConnectionRun(series), o)
}

// ConnectionRun arranges a watched socket's samples as a one-stream run
// whose client end is the socket, so the test rules apply to it unchanged.
func ConnectionRun(series []model.Sample) *model.Run {
	first, last := &series[0], &series[len(series)-1]
	sent := int64(last.BytesAcked.V) - int64(first.BytesAcked.V)
	recv := int64(last.BytesReceived.V) - int64(first.BytesReceived.V)
	sender := sent >= recv
	dir, role := model.ClientToServer, model.Sender
	moved := func(s *model.Sample) model.Bytes { return s.BytesAcked.V }
	if !sender {
		dir, role = model.ServerToClient, model.Receiver
		moved = func(s *model.Sample) model.Bytes { return s.BytesReceived.V }
	}
	span := last.At - first.At
	run := &model.Run{
		Schema:  model.SchemaVersion,
		Config:  model.TestConfig{Protocol: "tcp", Parallel: 1, Reverse: !sender},
		Streams: []model.StreamInfo{{ID: 0, Direction: dir}},
		Client:  model.EndReport{Side: model.ClientSide},
		Remote:  model.EndReport{Side: model.ServerSide, NoKernelState: true},
		Ended:   "complete",
	}
	var maxWnd model.Bytes
	var maxCwnd model.Bytes
	var maxRTT = first.RTT
	for i := 1; i < len(series); i++ {
		prev, cur := &series[i-1], &series[i]
		si := model.StreamInterval{Stream: 0, Role: role, Bytes: moved(cur) - moved(prev), TCP: *cur,
			RetransSegs: cur.TotalRetrans - prev.TotalRetrans}
		si.Rate = model.RateOf(si.Bytes, (cur.At - prev.At).Seconds())
		if sender {
			si.Limited = model.LimitedBetween(prev, cur)
			if b, ok := cur.BytesRetrans.Get(); ok {
				si.RetransBytes = model.Some(b - prev.BytesRetrans.V)
			}
		}
		run.Client.Intervals = append(run.Client.Intervals, model.Interval{Index: i - 1, Start: prev.At - first.At, End: cur.At - first.At,
			Streams: []model.StreamInterval{si}})
		maxWnd = max(maxWnd, cur.SndWnd.V)
		maxCwnd = max(maxCwnd, cur.CwndBytes())
		maxRTT = max(maxRTT, cur.RTT)
	}
	final := *last
	total := model.StreamTotal{Stream: 0, Role: role, Bytes: moved(last) - moved(first), Duration: span, Final: &final,
		MaxCwnd: model.Some(maxCwnd), MaxRTT: model.Some(maxRTT), StartMinRTT: first.MinRTT}
	if sender {
		total.RetransSegs = model.Some(last.TotalRetrans - first.TotalRetrans)
	}
	total.Rate = model.RateOf(total.Bytes, span.Seconds())
	total.AllBytes = total.Bytes
	if sender {
		total.Limited = model.LimitedBetween(first, last)
		if last.SndWnd.OK {
			total.MaxSndWnd = model.Some(maxWnd)
		}
		if b, ok := last.BytesSent.Get(); ok {
			total.SentBytes = model.Some(b - first.BytesSent.V)
		}
		if b, ok := last.BytesRetrans.Get(); ok {
			total.RetransBytes = model.Some(b - first.BytesRetrans.V)
		}
	}
	run.Client.Totals = []model.StreamTotal{total}
	// One end watched: a sender's acknowledged bytes are what arrived,
	// a receiver's read bytes what it got; the other figures are the
	// watched end's own.
	sum := model.DirectionSummary{Direction: dir, Streams: 1, SenderBytes: model.Some(total.Bytes), ReceiverBytes: model.Some(total.Bytes),
		Duration: model.Some(span), Goodput: model.Some(total.Rate), SenderRate: model.Some(total.Rate), RetransSegs: total.RetransSegs,
		RetransBytes: total.RetransBytes}
	if sender {
		sum.MeanRTT = model.Some(last.RTT)
	}
	if m, ok := run.Client.MinRTT(0).Get(); ok {
		sum.MinRTT = model.Some(m)
	}
	if s, ok := total.SentBytes.Get(); ok && s > 0 {
		sum.LossRate = model.Some(float64(total.RetransBytes.V) / float64(s))
	}
	run.Summary = []model.DirectionSummary{sum}
	return run
}

// ServerEnd diagnoses a test from the server's end alone, as a server
// sees the tests it serves (stock iperf3 clients' among them): the
// server's totals and samples through the same rules, its sending
// directions in full, its receiving ones by what it received. client
// and server are the test's two addresses (host:port, empty where not
// known): over loopback there is no path, as a client's own diagnosis
// says.
func ServerEnd(cfg model.TestConfig, rep model.EndReport, client, server string) []model.Finding {
	if cfg.IsUDP() {
		return serverDatagrams(cfg, rep)
	}
	return Test(ServedRun(cfg, rep, client, server), Options{})
}

// ServedRun is a test as its server alone saw it: the server's report as
// the run's far end, and a summary per direction from its totals (a
// receiver's bytes where the server received, its sent bytes where it
// only sent), its streams between the client's and the server's
// addresses (empty where not known). It is what a server archives of
// the tests it serves.
func ServedRun(cfg model.TestConfig, rep model.EndReport, client, server string) *model.Run {
	// The client is stock iperf3 or gone: its end is unknown, not zero.
	run := &model.Run{Schema: model.SchemaVersion, Config: cfg, Remote: rep, ServerRateCap: rep.RateCap,
		Client: model.EndReport{Side: model.ClientSide, NoKernelState: true}, Ended: "complete"}
	for i, d := range cfg.Directions() {
		run.Streams = append(run.Streams, model.StreamInfo{ID: i, Direction: d, ClientAddr: client, ServerAddr: server})
	}
	run.Summary = model.Summarize(run)
	return run
}

// serverDatagrams diagnoses the directions a UDP server received: its own
// account is the receiver's, which is where UDP's evidence is. The
// sending rate is estimated from the datagrams expected.
func serverDatagrams(cfg model.TestConfig, rep model.EndReport) []model.Finding {
	var out []model.Finding
	sum := model.DirectionSummary{Direction: model.ClientToServer}
	for _, t := range rep.Totals {
		if t.Role != model.Receiver || t.UDP == nil {
			continue
		}
		sum.Streams++
		sum.ReceiverBytes = model.Some(sum.ReceiverBytes.V + t.Bytes)
		sum.Duration = model.Some(max(sum.Duration.V, t.Duration))
		if sum.UDP == nil {
			sum.UDP = &model.Datagrams{SocketDrops: model.Some[int64](0)}
		}
		sum.UDP.Add(t.UDP)
	}
	if sum.UDP == nil {
		return nil
	}
	if cfg.Reverse || cfg.Bidir {
		sum.Direction = model.ClientToServer // a server receives only this way
	}
	sum.Goodput = model.Some(model.RateOf(sum.ReceiverBytes.V, sum.Duration.V.Seconds()))
	if got := sum.UDP.Packets - sum.UDP.Lost; got > 0 {
		sum.SenderRate = model.Some(model.Bitrate(float64(sum.Goodput.V) * float64(sum.UDP.Packets) / float64(got)))
	}
	out = datagramFindings(&sum, 0, cfg.Window, Options{})
	for i := range out {
		out[i].Direction = sum.Direction
	}
	sortFindings(out)
	return out
}
