package report

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Text prints a test for people: a header, one block per interval showing
// both ends side by side, then a summary of both ends.
type Text struct {
	w       io.Writer
	format  model.RateFormat
	verbose bool

	mu      sync.Mutex
	run     *model.Run
	pending map[model.Side]map[int]*model.Interval
	next    int             // index of the next interval block to print
	warned  map[string]bool // warnings Begin printed: End prints only later ones
}

// NewText returns a Text writing to w with rates in format f. Verbose adds
// a line per stream and end with the rest of the kernel's variables.
func NewText(w io.Writer, f model.RateFormat, verbose bool) *Text {
	return &Text{w: w, format: f, verbose: verbose, pending: map[model.Side]map[int]*model.Interval{
		model.ClientSide: {}, model.ServerSide: {},
	}}
}

func (t *Text) rate(r model.Bitrate) string { return model.FormatRate(r, t.format) }

// Begin prints the connection header.
func (t *Text) Begin(run *model.Run) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.run = run
	c := &run.Config
	what := fmt.Sprintf("%v", c.Duration)
	if c.Bytes > 0 {
		what = c.Bytes.Decimal() + " per direction"
	}
	server := run.Remote.Version
	if run.Remote.Kernel != "" {
		server += ", kernel " + run.Remote.Kernel
	}
	fmt.Fprintf(t.w, "tcpscope %s → %s (server %s), %s, %s, write size %s\n",
		run.Client.Version, run.Server, server, fmtStreams(len(run.Streams)), what, c.Length.Binary())
	if c.Window > 0 {
		fmt.Fprintf(t.w, "buffers requested with -w: %s each (Linux doubles a request, so %s expected where not clamped)\n",
			c.Window.Binary(), model.SockBufFor(c.Window).Binary())
	}
	udp := c.IsUDP()
	for _, s := range run.Streams {
		line := fmt.Sprintf("[%3d] %s %s ⇄ %s ", s.ID+1, arrow(s.Direction), s.ClientAddr, s.ServerAddr)
		if udp {
			line += "UDP "
		}
		line += " buffers " + setupText("client", s.Client, udp) + ", " + setupText("server", s.Server, udp)
		fmt.Fprintln(t.w, line)
	}
	t.warned = map[string]bool{}
	for _, w := range run.Warnings {
		fmt.Fprintf(t.w, "warning: %s\n", w)
		t.warned[w] = true
	}
	if c.Omit > 0 {
		fmt.Fprintf(t.w, "intervals marked * began within the first %v (-O); the totals start at that mark\n", c.Omit)
	}
	if udp {
		fmt.Fprintf(t.w, "[ ID] %-13s %-8s %12s %10s %10s %18s %10s %6s %6s\n",
			"Interval", "End", "Rate", "Bytes", "Datagrams", "Lost", "Jitter", "Late", "Drops")
		return
	}
	fmt.Fprintf(t.w, "[ ID] %-13s %-8s %12s %10s %5s %10s %19s %10s  %s\n",
		"Interval", "End", "Rate", "Bytes", "Retr", "Cwnd", "sRTT (min)", "Window", "Limited rwnd/sndbuf/cwnd/app")
}

// datagramLine prints a UDP stream's interval: the sender's count, or
// the receiver's loss, jitter, late (out-of-order) datagrams and socket
// buffer drops.
func (t *Text) datagramLine(id int, span string, si *model.StreamInterval) {
	d := si.UDP
	if si.Role == model.Sender {
		fmt.Fprintf(t.w, "[%3d] %-13s %-8s %12s %10s %10d\n", id+1, span, "sender", t.rate(si.Rate), si.Bytes.Decimal(), d.Packets)
		return
	}
	drops := "-"
	if v, ok := d.SocketDrops.Get(); ok {
		drops = fmt.Sprint(v)
	}
	fmt.Fprintf(t.w, "[%3d] %-13s %-8s %12s %10s %10d %18s %10s %6d %6s\n", id+1, span, "receiver", t.rate(si.Rate), si.Bytes.Decimal(),
		d.Packets, fmt.Sprintf("%d (%.3g%%)", d.Lost, 100*d.LossRate()), fmtJitter(d.Jitter), d.OutOfOrder, drops)
}

// fmtJitter prints jitter in ms, as iperf3 does, to the microsecond.
func fmtJitter(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }

func arrow(d model.Direction) string {
	if d == model.ClientToServer {
		return "client→server"
	}
	return "server→client"
}

func fmtStreams(n int) string {
	if n == 1 {
		return "1 stream"
	}
	return fmt.Sprintf("%d streams", n)
}

// Interval buffers an end's interval and prints every block for which
// both ends have reported, in order. A server that reports no intervals
// (a stock iperf3) is not waited for: the client's print as they come.
func (t *Text) Interval(side model.Side, iv *model.Interval) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending[side][iv.Index] = iv
	silent := t.run != nil && t.run.Remote.NoKernelState
	for {
		c, s := t.pending[model.ClientSide][t.next], t.pending[model.ServerSide][t.next]
		if c == nil || (s == nil && !silent) {
			return
		}
		t.block(c, s)
		delete(t.pending[model.ClientSide], t.next)
		delete(t.pending[model.ServerSide], t.next)
		t.next++
	}
}

// flush prints intervals only one end reported (a test that broke off, or
// the final interval one end never sent).
func (t *Text) flush() {
	for {
		c, s := t.pending[model.ClientSide][t.next], t.pending[model.ServerSide][t.next]
		if c == nil && s == nil {
			if len(t.pending[model.ClientSide])+len(t.pending[model.ServerSide]) == 0 {
				return
			}
			t.next++
			continue
		}
		t.block(c, s)
		delete(t.pending[model.ClientSide], t.next)
		delete(t.pending[model.ServerSide], t.next)
		t.next++
	}
}

// block prints one interval: per stream the sender's view, then the
// receiver's, then sums when there are several streams.
func (t *Text) block(client, server *model.Interval) {
	ref := client
	if ref == nil {
		ref = server
	}
	span := fmt.Sprintf("%.2f-%.2f s", ref.Start.Seconds(), ref.End.Seconds())
	if ref.Omitted {
		span += "*"
	}
	views := map[int][]*model.StreamInterval{}
	ids := []int{}
	for _, iv := range []*model.Interval{client, server} {
		if iv == nil {
			continue
		}
		for i := range iv.Streams {
			si := &iv.Streams[i]
			if _, ok := views[si.Stream]; !ok {
				ids = append(ids, si.Stream)
			}
			views[si.Stream] = append(views[si.Stream], si)
		}
	}
	// Sums per role, of the roles some end reported: an end that
	// reported no interval (a stock iperf3 peer) sums to nothing, not 0.
	var sumBytes [2]model.Bytes
	var reported [2]bool
	var sumRetr uint32
	var dur time.Duration
	if client != nil {
		dur = client.End - client.Start
	} else {
		dur = server.End - server.Start
	}
	for _, id := range ids {
		vs := views[id]
		// Sender first: the cause, then the effect.
		if len(vs) == 2 && vs[0].Role != model.Sender {
			vs[0], vs[1] = vs[1], vs[0]
		}
		for _, si := range vs {
			t.streamLine(id, span, si)
			if si.Role == model.Sender {
				reported[0] = true
				sumBytes[0] += si.Bytes
				sumRetr += si.RetransSegs
				if si.UDP != nil {
					sumRetr += uint32(si.UDP.Packets) // datagrams, in that column
				}
			} else {
				reported[1] = true
				sumBytes[1] += si.Bytes
			}
		}
	}
	if len(ids) > 1 {
		width := 5
		if t.run != nil && t.run.Config.IsUDP() {
			width = 10
		}
		if reported[0] {
			fmt.Fprintf(t.w, "[SUM] %-13s %-8s %12s %10s %*d\n", span, "sender", t.rate(model.RateOf(sumBytes[0], dur.Seconds())), sumBytes[0].Decimal(), width, sumRetr)
		}
		if reported[1] {
			fmt.Fprintf(t.w, "[SUM] %-13s %-8s %12s %10s\n", span, "receiver", t.rate(model.RateOf(sumBytes[1], dur.Seconds())), sumBytes[1].Decimal())
		}
	}
}

func (t *Text) streamLine(id int, span string, si *model.StreamInterval) {
	if si.UDP != nil {
		t.datagramLine(id, span, si)
		return
	}
	s := &si.TCP
	rtt := fmtDur(s.RTT)
	if m, ok := s.MinRTT.Get(); ok {
		rtt += " (" + fmtDur(m) + ")"
	}
	if si.Role == model.Sender {
		wnd := "-"
		if w, ok := s.SndWnd.Get(); ok {
			wnd = w.Binary()
		}
		lim := "-"
		if l, ok := si.Limited.Get(); ok {
			lim = fmt.Sprintf("%3.0f/%3.0f/%3.0f/%3.0f %%", 100*l.Rwnd, 100*l.Sndbuf, 100*l.Cwnd, 100*l.App)
		}
		fmt.Fprintf(t.w, "[%3d] %-13s %-8s %12s %10s %5d %10s %19s %10s  %s\n",
			id+1, span, "sender", t.rate(si.Rate), si.Bytes.Decimal(), si.RetransSegs, s.CwndBytes().Binary(), rtt, wnd, lim)
		if t.verbose {
			t.senderDetail(si)
		}
		return
	}
	wnd := s.RcvSpace.Binary()
	if w, ok := s.RcvWnd.Get(); ok {
		wnd = w.Binary()
	}
	extra := ""
	if s.RcvRTT > 0 {
		extra = "rcv_rtt " + fmtDur(s.RcvRTT)
	}
	if n, ok := s.RcvOOOPack.Get(); ok && n > 0 {
		extra += fmt.Sprintf(" ooo %d", n)
	}
	fmt.Fprintf(t.w, "[%3d] %-13s %-8s %12s %10s %5s %10s %19s %10s  %s\n",
		id+1, span, "receiver", t.rate(si.Rate), si.Bytes.Decimal(), "", "", "", wnd, strings.TrimSpace(extra))
	if t.verbose {
		fmt.Fprintf(t.w, "      rcv_space %s  rcv_ssthresh %s  rcv_mss %d B  advmss %d B  ato %s  %s\n",
			s.RcvSpace.Binary(), s.RcvSsthresh.Binary(), s.RcvMSS, s.AdvMSS, fmtDur(s.ATO), s.Options)
	}
}

// senderDetail prints the rest of a sender's variables on one line.
func (t *Text) senderDetail(si *model.StreamInterval) {
	s := &si.TCP
	var b strings.Builder
	ss := "∞"
	if v, ok := s.SsthreshBytes().Get(); ok {
		ss = v.Binary()
	}
	fmt.Fprintf(&b, "      ssthresh %s  rttvar %s  rto %s  lost %d  reordering %d", ss, fmtDur(s.RTTVar), fmtDur(s.RTO), s.Lost, s.Reordering)
	if v, ok := s.ReordSeen.Get(); ok {
		fmt.Fprintf(&b, "  reord_seen %d", v)
	}
	if v, ok := s.DSACKDups.Get(); ok {
		fmt.Fprintf(&b, "  dsack_dups %d", v)
	}
	if v, ok := si.RetransBytes.Get(); ok {
		fmt.Fprintf(&b, "  retrans %s", v.Decimal())
	}
	if v, ok := s.DeliveryRate.Get(); ok {
		fmt.Fprintf(&b, "  delivery %s", t.rate(v))
		if s.DeliveryRateAppLimited {
			b.WriteString(" (app-limited)")
		}
	}
	if v, ok := s.PacingRate.Get(); ok {
		fmt.Fprintf(&b, "  pacing %s", t.rate(v))
	}
	fmt.Fprintf(&b, "  unacked %s", s.UnackedBytes().Decimal())
	if v, ok := s.NotsentBytes.Get(); ok {
		fmt.Fprintf(&b, "  notsent %s", v.Decimal())
	}
	fmt.Fprintf(&b, "  pmtu %d  mss %d  %s  %s %s", s.PMTU, s.SndMSS, s.Options, s.Congestion, s.CAState)
	if s.BBR != nil {
		fmt.Fprintf(&b, "  bbr %s bw %s min_rtt %s", s.BBR.Mode(), t.rate(s.BBR.BW), fmtDur(s.BBR.MinRTT))
	}
	fmt.Fprintln(t.w, b.String())
}

// fmtDur prints a duration with three significant digits in µs or ms.
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.3gs", d.Seconds())
	}
}

// notMeasured stands where an end did not report a figure: never a zero.
const notMeasured = "not measured"

// setupText is one end's socket setup for a stream's header line.
func setupText(side string, s *model.SocketSetup, udp bool) string {
	if s == nil {
		return side + " " + notMeasured
	}
	out := fmt.Sprintf("%s snd %s rcv %s", side, s.SndBuf.Binary(), s.RcvBuf.Binary())
	if !udp && s.Congestion != "" {
		out += " cc " + s.Congestion
	}
	return out
}

// End prints the remaining intervals and the summary of both ends.
func (t *Text) End(run *model.Run) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flush()
	fmt.Fprintln(t.w, strings.Repeat("- ", 40))
	if run.Ended != "complete" {
		fmt.Fprintf(t.w, "test ended early: %s\n", run.Ended)
	}
	for _, d := range run.Summary {
		clock := "receiver's time"
		if d.FromAcks {
			clock = "sender's time (the receiver's report is missing)"
		}
		if dur, ok := d.Duration.Get(); ok {
			fmt.Fprintf(t.w, "%s, %s, %s %.2f s\n", arrow(d.Direction), fmtStreams(d.Streams), clock, dur.Seconds())
		} else {
			fmt.Fprintf(t.w, "%s, %s, the receiver's report is missing\n", arrow(d.Direction), fmtStreams(d.Streams))
		}
		switch g, ok := d.Goodput.Get(); {
		case ok && d.FromAcks:
			fmt.Fprintf(t.w, "  goodput     %s  (%s acknowledged by the receiver, per the sender's kernel)\n", t.rate(g), d.ReceiverBytes.V.Decimal())
		case ok:
			fmt.Fprintf(t.w, "  goodput     %s  (%s received)\n", t.rate(g), d.ReceiverBytes.V.Decimal())
		default:
			fmt.Fprintf(t.w, "  goodput     %s\n", notMeasured)
		}
		if r, ok := d.SenderRate.Get(); ok {
			fmt.Fprintf(t.w, "  sent        %s  (%s written by the sender)\n", t.rate(r), d.SenderBytes.V.Decimal())
		} else {
			fmt.Fprintf(t.w, "  sent        %s (the sender's report is missing)\n", notMeasured)
		}
		t.tail(&d)
		if u := d.UDP; u != nil {
			late := fmt.Sprintf("%d late (out of order)", u.OutOfOrder)
			if receiverOf(run, d.Direction).NoKernelState {
				// iperf3's results carry no count of late datagrams.
				late = "late (out of order) " + notMeasured
			}
			fmt.Fprintf(t.w, "  datagrams   %d expected, %d lost (%.4g%%), %s, jitter %s\n",
				u.Packets, u.Lost, 100*u.LossRate(), late, fmtJitter(u.Jitter))
			if v, ok := u.SocketDrops.Get(); ok {
				fmt.Fprintf(t.w, "  rcv buffer  %d datagrams dropped by the receiver's full socket buffer (on its host, not the path)\n", v)
			}
			continue
		}
		if run.Config.IsUDP() {
			continue
		}
		retr := notMeasured
		if n, ok := d.RetransSegs.Get(); ok {
			retr = fmt.Sprintf("%d segments", n)
			if b, ok := d.RetransBytes.Get(); ok {
				retr += ", " + b.Decimal()
			}
			if p, ok := d.LossRate.Get(); ok {
				retr += fmt.Sprintf(" (%.4f%% of bytes sent)", 100*p)
			}
		}
		fmt.Fprintf(t.w, "  retransmit  %s\n", retr)
		var rtts []string
		if m, ok := d.MinRTT.Get(); ok {
			rtts = append(rtts, "min "+fmtDur(m))
		}
		if m, ok := d.MeanRTT.Get(); ok {
			rtts = append(rtts, "smoothed "+fmtDur(m))
		}
		if len(rtts) == 0 {
			rtts = append(rtts, notMeasured+" (the sender's kernel was not read)")
		}
		fmt.Fprintf(t.w, "  RTT         %s\n", strings.Join(rtts, ", "))
		t.limits(run, d.Direction)
	}
	t.ends(run)
	t.cpu(run)
	if run.ServerOutput != "" {
		fmt.Fprintf(t.w, "server output:\n%s\n", strings.TrimRight(run.ServerOutput, "\n"))
	}
	for _, w := range run.Warnings {
		if !t.warned[w] {
			fmt.Fprintf(t.w, "warning: %s\n", w)
		}
	}
	if len(run.Diagnosis) > 0 {
		return WriteDiagnosis(t.w, run.Diagnosis, t.verbose)
	}
	return nil
}

// limits prints what held the senders back over the whole test, and the
// negotiated options, from the sender's final sample of the first stream.
func (t *Text) limits(run *model.Run, dir model.Direction) {
	sender := &run.Client
	if dir == model.ServerToClient {
		sender = &run.Remote
	}
	var rw, sb, cw, app float64
	n := 0
	var first *model.StreamTotal
	for i := range sender.Totals {
		tot := &sender.Totals[i]
		if tot.Role != model.Sender {
			continue
		}
		if first == nil {
			first = tot
		}
		if l, ok := tot.Limited.Get(); ok {
			rw, sb, cw, app = rw+l.Rwnd, sb+l.Sndbuf, cw+l.Cwnd, app+l.App
			n++
		}
	}
	if n > 0 {
		f := 100 / float64(n)
		fmt.Fprintf(t.w, "  limited by  receive window %.0f%%, send buffer %.0f%%, congestion window %.0f%%, application %.0f%%\n", rw*f, sb*f, cw*f, app*f)
	}
	if first != nil && first.Final == nil && sender.Congestion != "" {
		fmt.Fprintf(t.w, "  options     %s (the sender's kernel was not read); cc %s, as the sender reported\n", notMeasured, sender.Congestion)
	}
	if first == nil || first.Final == nil {
		return
	}
	s := first.Final
	line := fmt.Sprintf("  options     %s, mss %d B, pmtu %d B, cc %s", s.Options, s.SndMSS, s.PMTU, s.Congestion)
	if s.BBR != nil {
		line += " (" + s.BBR.Mode() + ")"
	}
	fmt.Fprintln(t.w, line)
	if w, ok := first.MaxSndWnd.Get(); ok {
		fmt.Fprintf(t.w, "  peer window max %s, cwnd max %s\n", w.Binary(), first.MaxCwnd.V.Binary())
	}
}

// ends prints each end's own account per stream.
func (t *Text) ends(run *model.Run) {
	fmt.Fprintln(t.w, "per stream, both ends:")
	for _, e := range []*model.EndReport{&run.Client, &run.Remote} {
		for _, tot := range e.Totals {
			what := ""
			if tot.Role == model.Sender {
				what = "retr " + tot.RetransSegs.String()
			}
			if u := tot.UDP; u != nil {
				what = fmt.Sprintf("datagrams %d", u.Packets)
				if tot.Role == model.Receiver {
					what += fmt.Sprintf(", lost %d, jitter %s", u.Lost, fmtJitter(u.Jitter))
				}
			}
			line := fmt.Sprintf("[%3d] %-6s %-8s %10s in %6.2f s = %12s  %s",
				tot.Stream+1, e.Side, tot.Role, tot.Bytes.Decimal(), tot.Duration.Seconds(), t.rate(tot.Rate), what)
			fmt.Fprintln(t.w, strings.TrimRight(line, " "))
		}
	}
}

// receiverOf is the end that receives in direction d.
func receiverOf(run *model.Run, d model.Direction) *model.EndReport {
	if d == model.ClientToServer {
		return &run.Remote
	}
	return &run.Client
}

// cpu prints each end's process CPU use over its test, as iperf3 does:
// a sender or receiver pegging a core explains a low rate.
func (t *Text) cpu(run *model.Run) {
	if run.Client.CPU == nil && run.Remote.CPU == nil {
		return // a recording from before ends reported it
	}
	var parts []string
	for _, e := range []*model.EndReport{&run.Client, &run.Remote} {
		if u := e.CPU; u != nil {
			parts = append(parts, fmt.Sprintf("%s %.1f%% (user %.1f%%, system %.1f%%)", e.Side, u.Total, u.User, u.System))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s", e.Side, notMeasured))
		}
	}
	fmt.Fprintf(t.w, "CPU, %% of one core over each end's test: %s\n", strings.Join(parts, ", "))
}
