package report

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Text prints a test for people: a header, a table with a row per
// stream and interval showing both ends side by side, then a summary of
// both ends. Every line fits the width it is given (80 columns unless
// told more), prose wrapped at spaces; a wider width adds columns.
type Text struct {
	w    io.Writer
	opt  TextOptions
	cols []column

	mu      sync.Mutex
	run     *model.Run
	pending map[model.Side]map[int]*model.Interval
	next    int             // index of the next interval block to print
	warned  map[string]bool // warnings Begin printed: End prints only later ones
}

// TextOptions shape the text output.
type TextOptions struct {
	// Format is the unit of rates.
	Format model.RateFormat
	// Verbose adds, under each stream's row, both ends' further kernel
	// variables, and the findings' explanations.
	Verbose bool
	// Width is the terminal's width in columns; below 80 (or 0) it is
	// 80. Above 80 the interval table adds columns while they fit.
	Width int
	// NoIntervals prints no interval table, its legend or its header
	// (-i 0, iperf3's "no interval reports"): the summary is the report.
	NoIntervals bool
}

// MinWidth is the width the text output fits at least.
const MinWidth = 80

// NewText returns a Text writing to w.
func NewText(w io.Writer, o TextOptions) *Text {
	o.Width = max(o.Width, MinWidth)
	return &Text{w: w, opt: o, pending: map[model.Side]map[int]*model.Interval{
		model.ClientSide: {}, model.ServerSide: {},
	}}
}

func (t *Text) rate(r model.Bitrate) string { return model.FormatRate(r, t.opt.Format) }

// wrapped prints s broken at spaces to the width: the first line starts
// with first, the others with indent. A word longer than a line (an
// address, a command) is never broken.
func (t *Text) wrapped(first, indent, s string) {
	for _, l := range wrap(first+s, t.opt.Width, indent) {
		fmt.Fprintln(t.w, l)
	}
}

// wrap breaks s into lines of at most width runes, after a comma where
// one falls in the line, else at a space; lines after the first start
// with indent. A word longer than a line (an address, a command) is never
// broken.
func wrap(s string, width int, indent string) []string {
	var out []string
	for utf8.RuneCountInString(s) > width {
		space, comma, n := -1, -1, 0
		for i, r := range s {
			if n > width {
				break
			}
			// Break at a space past the indent, and never inside a
			// run of spaces that aligns a column.
			if r == ' ' && n > len(indent) && (i+1 >= len(s) || s[i+1] != ' ') {
				space = i
				if s[i-1] == ',' || s[i-1] == ';' {
					comma = i
				}
			}
			n++
		}
		// A comma that leaves most of the line filled ends a phrase;
		// else the last space.
		cut := space
		if comma >= 0 && utf8.RuneCountInString(s[:comma]) >= 2*width/3 {
			cut = comma
		}
		if cut < 0 {
			break // one word wider than the line: left whole
		}
		out = append(out, strings.TrimRight(s[:cut], " "))
		s = indent + strings.TrimLeft(s[cut:], " ")
	}
	return append(out, s)
}

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
	udp := c.IsUDP()
	head := fmt.Sprintf("tcpscope %s → %s (server %s), %s, %s, write size %s",
		run.Client.Version, run.Server, server, fmtStreams(len(run.Streams)), what, c.Length.Binary())
	if cc := commonCongestion(run); cc != "" && !udp {
		head += ", cc " + cc
	}
	t.wrapped("", "  ", head)
	if c.Window > 0 {
		t.wrapped("", "  ", fmt.Sprintf("buffers requested with -w: %s each (Linux doubles a request, so %s expected where not clamped)",
			c.Window.Binary(), model.SockBufFor(c.Window).Binary()))
	}
	t.streams(run)
	t.warned = map[string]bool{}
	for _, w := range run.Warnings {
		t.wrapped("warning: ", "  ", w)
		t.warned[w] = true
	}
	if c.Omit > 0 {
		t.wrapped("", "  ", fmt.Sprintf("intervals marked * began within the first %v (-O); the totals start at that mark", c.Omit))
	}
	if t.opt.NoIntervals {
		return
	}
	if udp {
		t.cols = chooseColumns(udpColumns(spanWidth(c)), t.opt.Width)
	} else {
		t.cols = chooseColumns(tcpColumns(spanWidth(c)), t.opt.Width)
		writes := "(its writes: -V)"
		if slices.ContainsFunc(t.cols, func(c column) bool { return c.head == "Written" }) {
			writes = "(its writes: Written)"
		}
		fmt.Fprintln(t.w, "Acked: what the receiver acknowledged, by the sender's kernel "+writes)
		fmt.Fprintln(t.w, "Limited: what held the sender back most: rwnd, sndbuf, cwnd or app (idle)")
	}
	if run.Remote.NoKernelState {
		fmt.Fprintln(t.w, "A dash is what was not measured: a stock iperf3 server reports no intervals")
	}
	fmt.Fprintln(t.w, t.header())
}

// streams prints a line per stream, and each end's socket buffers under
// it, or once under them all when every stream has the same.
func (t *Text) streams(run *model.Run) {
	cc := !run.Config.IsUDP() && commonCongestion(run) == ""
	same := true
	for _, s := range run.Streams[min(1, len(run.Streams)):] {
		first := &run.Streams[0]
		same = same && setupText(s.Client, cc) == setupText(first.Client, cc) && setupText(s.Server, cc) == setupText(first.Server, cc)
	}
	buffers := func(s *model.StreamInfo, each string) {
		t.wrapped("      client buffers: ", "        ", setupText(s.Client, cc)+each)
		t.wrapped("      server buffers: ", "        ", setupText(s.Server, cc)+each)
	}
	for i := range run.Streams {
		s := &run.Streams[i]
		line := fmt.Sprintf("[%3d] %s %s ⇄ %s", s.ID+1, arrow(s.Direction), s.ClientAddr, s.ServerAddr)
		if run.Config.IsUDP() {
			line += " UDP"
		}
		t.wrapped("", "      ", line)
		if !same {
			buffers(s, "")
		}
	}
	switch {
	case !same || len(run.Streams) == 0:
	case len(run.Streams) == 1:
		buffers(&run.Streams[0], "")
	default:
		buffers(&run.Streams[0], " (each stream)")
	}
}

// commonCongestion is the congestion control every socket of both ends
// reported, or "" when they differ or none reported one.
func commonCongestion(run *model.Run) string {
	cc := ""
	for _, s := range run.Streams {
		for _, e := range []*model.SocketSetup{s.Client, s.Server} {
			if e == nil || e.Congestion == "" {
				continue
			}
			if cc != "" && cc != e.Congestion {
				return ""
			}
			cc = e.Congestion
		}
	}
	return cc
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
	if t.opt.NoIntervals {
		return
	}
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

// block prints one interval: a row per stream with its sender's and
// its receiver's view, then the sum of each direction's streams where
// there are several.
func (t *Text) block(client, server *model.Interval) {
	ref := client
	if ref == nil {
		ref = server
	}
	var every time.Duration
	if t.run != nil {
		every = t.run.Config.Interval
	}
	span := fmtSpan(ref, every)
	type ends struct{ snd, rcv *model.StreamInterval }
	views := map[int]*ends{}
	var ids []int
	for _, iv := range []*model.Interval{client, server} {
		if iv == nil {
			continue
		}
		for i := range iv.Streams {
			si := &iv.Streams[i]
			e := views[si.Stream]
			if e == nil {
				e = &ends{}
				views[si.Stream] = e
				ids = append(ids, si.Stream)
			}
			if si.Role == model.Sender {
				e.snd = si
			} else {
				e.rcv = si
			}
		}
	}
	slices.Sort(ids)
	sum := map[model.Direction]*sums{}
	n := map[model.Direction]int{}
	var dirs []model.Direction
	for _, id := range ids {
		e := views[id]
		t.printRow(&row{id: fmt.Sprintf("[%3d]", id+1), span: span, snd: e.snd, rcv: e.rcv})
		d := t.direction(id)
		if sum[d] == nil {
			sum[d] = &sums{}
			dirs = append(dirs, d)
		}
		sum[d].add(e.snd, e.rcv)
		n[d]++
	}
	// A sum per direction of several streams; a single stream is its
	// own sum.
	for _, d := range dirs {
		if n[d] < 2 {
			continue
		}
		id := "[SUM]"
		if len(dirs) > 1 {
			id = map[model.Direction]string{model.ClientToServer: "[C→S]", model.ServerToClient: "[S→C]"}[d]
		}
		t.printRow(&row{id: id, span: span, sum: sum[d]})
	}
}

// direction is the way stream id flows.
func (t *Text) direction(id int) model.Direction {
	if t.run != nil {
		for _, s := range t.run.Streams {
			if s.ID == id {
				return s.Direction
			}
		}
	}
	return model.ClientToServer
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

// setupText is one end's socket setup for a stream.
// cc adds its congestion control, for a run whose sockets do not all
// use the same (the header names it otherwise).
func setupText(s *model.SocketSetup, cc bool) string {
	if s == nil {
		return notMeasured
	}
	out := fmt.Sprintf("snd %s, rcv %s", s.SndBuf.Binary(), s.RcvBuf.Binary())
	if cc && s.Congestion != "" {
		out += ", cc " + s.Congestion
	}
	return out
}

// End prints the remaining intervals and the summary of both ends.
func (t *Text) End(run *model.Run) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flush()
	fmt.Fprintln(t.w, strings.TrimSpace(strings.Repeat("- ", 40)))
	if run.Ended != "complete" {
		t.wrapped("test ended early: ", "  ", run.Ended)
	}
	for _, d := range run.Summary {
		t.summary(run, &d)
	}
	t.ends(run)
	t.cpu(run)
	if run.ServerOutput != "" {
		fmt.Fprintf(t.w, "server output:\n%s\n", strings.TrimRight(run.ServerOutput, "\n"))
	}
	for _, w := range run.Warnings {
		if !t.warned[w] {
			t.wrapped("warning: ", "  ", w)
		}
	}
	if len(run.Diagnosis) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := WriteDiagnosis(&b, run.Diagnosis, t.opt.Verbose); err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		body := strings.TrimLeft(l, " ")
		if strings.HasPrefix(body, "fix, ") {
			// A command is copied whole: never broken.
			fmt.Fprintln(t.w, l)
			continue
		}
		t.wrapped("", strings.Repeat(" ", len(l)-len(body)+2), l)
	}
	return nil
}

// item prints one line of a direction's summary: a label and its value,
// wrapped under the value.
func (t *Text) item(label, value string) {
	t.wrapped(fmt.Sprintf("  %-11s ", label), strings.Repeat(" ", 14), value)
}

// summary prints the summary of one direction.
func (t *Text) summary(run *model.Run, d *model.DirectionSummary) {
	clock := "receiver's time"
	if d.FromAcks {
		clock = "sender's time (the receiver's report is missing)"
	}
	if dur, ok := d.Duration.Get(); ok {
		t.wrapped("", "  ", fmt.Sprintf("%s, %s, %s %.2f s", arrow(d.Direction), fmtStreams(d.Streams), clock, dur.Seconds()))
	} else {
		t.wrapped("", "  ", fmt.Sprintf("%s, %s, the receiver's report is missing", arrow(d.Direction), fmtStreams(d.Streams)))
	}
	switch g, ok := d.Goodput.Get(); {
	case ok && d.FromAcks:
		t.item("goodput", fmt.Sprintf("%s  (%s acknowledged by the receiver, per the sender's kernel)", t.rate(g), d.ReceiverBytes.V.Decimal()))
	case ok:
		t.item("goodput", fmt.Sprintf("%s  (%s received)", t.rate(g), d.ReceiverBytes.V.Decimal()))
	default:
		t.item("goodput", notMeasured)
	}
	if r, ok := d.SenderRate.Get(); ok {
		t.item("sent", fmt.Sprintf("%s  (%s written by the sender)", t.rate(r), d.SenderBytes.V.Decimal()))
	} else {
		t.item("sent", notMeasured+" (the sender's report is missing)")
	}
	t.tail(d)
	if u := d.UDP; u != nil {
		late := fmt.Sprintf("%d late (out of order)", u.OutOfOrder)
		if receiverOf(run, d.Direction).NoKernelState {
			// iperf3's results carry no count of late datagrams.
			late = "late (out of order) " + notMeasured
		}
		t.item("datagrams", fmt.Sprintf("%d expected, %d lost (%.4g%%), %s, jitter %s",
			u.Packets, u.Lost, 100*u.LossRate(), late, fmtJitter(u.Jitter)))
		if v, ok := u.SocketDrops.Get(); ok {
			t.item("rcv buffer", fmt.Sprintf("%d datagrams dropped by the receiver's full socket buffer (on its host, not the path)", v))
		}
		return
	}
	if run.Config.IsUDP() {
		return
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
	t.item("retransmit", retr)
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
	t.item("RTT", strings.Join(rtts, ", "))
	t.limits(run, d.Direction)
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
		t.item("limited by", fmt.Sprintf("receive window %.0f%%, send buffer %.0f%%, congestion window %.0f%%, application %.0f%%", rw*f, sb*f, cw*f, app*f))
	}
	if first != nil && first.Final == nil && sender.Congestion != "" {
		t.item("options", fmt.Sprintf("%s (the sender's kernel was not read); cc %s, as the sender reported", notMeasured, sender.Congestion))
	}
	if first == nil || first.Final == nil {
		return
	}
	s := first.Final
	opts := fmt.Sprintf("%s, mss %d B, pmtu %d B, cc %s", s.Options, s.SndMSS, s.PMTU, s.Congestion)
	if s.BBR != nil {
		opts += " (" + s.BBR.Mode() + ")"
	}
	t.item("options", opts)
	if w, ok := first.MaxSndWnd.Get(); ok {
		t.item("peak", fmt.Sprintf("peer window %s, cwnd %s", w.Binary(), first.MaxCwnd.V.Binary()))
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
			t.wrapped("", strings.Repeat(" ", 6), strings.TrimRight(line, " "))
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
	t.wrapped("", "  ", "CPU, % of one core over each end's test: "+strings.Join(parts, ", "))
}
