package report

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tcpscope/tcpscope/internal/model"
)

// A row of the interval table: one stream over one interval, both ends
// side by side, or the sum of several streams. An end that did not report
// the interval is nil; what it would have said is printed as "-".
type row struct {
	id       string // "[  1]", "[SUM]", "[C→S]"
	span     string
	snd, rcv *model.StreamInterval
	sum      *sums // nil on a stream's row
}

// sums adds up the streams of one interval (of one direction in a bidir
// test). A figure some stream lacks stays unknown: a sum of what was
// measured would pass for the whole.
type sums struct {
	written, received    model.Opt[model.Bitrate]
	acked                model.Opt[model.Bitrate]
	bytes                model.Opt[model.Bytes] // received
	retr                 model.Opt[uint32]
	sent, rcvd           *model.Datagrams // UDP: the senders' and receivers' accounts
	sndSeen, rcvSeen     int              // streams whose sender, receiver reported
	ackedOK, ackedAbsent bool
}

func (s *sums) add(snd, rcv *model.StreamInterval) {
	if snd != nil {
		s.sndSeen++
		s.written = model.Some(s.written.V + snd.Rate)
		if a, ok := snd.AckedRate.Get(); ok {
			s.acked = model.Some(s.acked.V + a)
			s.ackedOK = true
		} else {
			s.ackedAbsent = true
		}
		s.retr = model.Some(s.retr.V + snd.RetransSegs)
		if snd.UDP != nil {
			s.sent = addDatagrams(s.sent, snd.UDP)
		}
	}
	if rcv != nil {
		s.rcvSeen++
		s.received = model.Some(s.received.V + rcv.Rate)
		s.bytes = model.Some(s.bytes.V + rcv.Bytes)
		if rcv.UDP != nil {
			s.rcvd = addDatagrams(s.rcvd, rcv.UDP)
		}
	}
}

func addDatagrams(to, d *model.Datagrams) *model.Datagrams {
	if to == nil {
		c := *d
		return &c
	}
	to.Add(d)
	return to
}

// column is one column of the interval table.
type column struct {
	head  string
	width int
	// rank 0 is always shown; wider terminals add the others, lowest
	// rank first, while the line still fits.
	rank int
	left bool // text, not a figure
	cell func(t *Text, r *row) string
}

// dash stands in a column for a figure an end did not report: never a
// zero.
const dash = "-"

// tcpColumns are the interval table's columns for a TCP test, in the
// order they print. The essentials fit 80 columns: the delivered rate by
// the sender's kernel and the receiver's, retransmissions, the
// congestion window, the RTT and what held the sender back.
func tcpColumns(spanWidth int) []column {
	return []column{
		{head: "Interval", width: spanWidth, left: true, cell: func(_ *Text, r *row) string { return r.span }},
		{head: "Written", width: 12, rank: 1, cell: func(t *Text, r *row) string {
			if r.sum != nil {
				return t.optRate(r.sum.written, r.sum.sndSeen)
			}
			if r.snd == nil {
				return dash
			}
			return t.rate(r.snd.Rate)
		}},
		{head: "Acked", width: 12, cell: func(t *Text, r *row) string {
			if r.sum != nil {
				if r.sum.ackedAbsent || !r.sum.ackedOK {
					return dash
				}
				return t.rate(r.sum.acked.V)
			}
			if r.snd == nil {
				return dash
			}
			if a, ok := r.snd.AckedRate.Get(); ok {
				return t.rate(a)
			}
			return dash
		}},
		receivedColumn(),
		transferColumn(4),
		{head: "Retr", width: 4, cell: func(_ *Text, r *row) string {
			if r.sum != nil {
				if r.sum.sndSeen == 0 {
					return dash
				}
				return fmt.Sprint(r.sum.retr.V)
			}
			if r.snd == nil {
				return dash
			}
			return fmt.Sprint(r.snd.RetransSegs)
		}},
		{head: "Cwnd", width: 8, cell: func(_ *Text, r *row) string {
			if s := kernelOf(r.snd); s != nil {
				return s.CwndBytes().Binary()
			}
			return blankOnSum(r)
		}},
		{head: "Rwnd", width: 9, rank: 2, cell: func(_ *Text, r *row) string {
			// The receiver's window as it advertises it, else as
			// the sender last saw it.
			if s := kernelOf(r.rcv); s != nil {
				if w, ok := s.RcvWnd.Get(); ok {
					return w.Binary()
				}
			}
			if s := kernelOf(r.snd); s != nil {
				if w, ok := s.SndWnd.Get(); ok {
					return w.Binary()
				}
			}
			return blankOnSum(r)
		}},
		{head: "sRTT", width: 6, cell: func(_ *Text, r *row) string {
			if s := kernelOf(r.snd); s != nil {
				return fmtDur(s.RTT)
			}
			return blankOnSum(r)
		}},
		{head: "minRTT", width: 7, rank: 3, cell: func(_ *Text, r *row) string {
			if s := kernelOf(r.snd); s != nil {
				if m, ok := s.MinRTT.Get(); ok {
					return fmtDur(m)
				}
			}
			return blankOnSum(r)
		}},
		{head: "rcvRTT", width: 7, rank: 6, cell: func(_ *Text, r *row) string {
			if s := kernelOf(r.rcv); s != nil && s.RcvRTT > 0 {
				return fmtDur(s.RcvRTT)
			}
			return blankOnSum(r)
		}},
		{head: "OOO", width: 5, rank: 5, cell: func(_ *Text, r *row) string {
			if r.rcv != nil {
				if n, ok := r.rcv.OutOfOrder.Get(); ok {
					return fmt.Sprint(n)
				}
			}
			return blankOnSum(r)
		}},
		{head: "Limited", width: 11, left: true, cell: func(_ *Text, r *row) string {
			if r.snd != nil {
				if l, ok := r.snd.Limited.Get(); ok {
					return topLimit(l)
				}
			}
			return blankOnSum(r)
		}},
	}
}

// receivedColumn is the receiver's rate, a TCP and a UDP table's alike.
func receivedColumn() column {
	return column{head: "Received", width: 12, cell: func(t *Text, r *row) string {
		if r.sum != nil {
			return t.optRate(r.sum.received, r.sum.rcvSeen)
		}
		if r.rcv == nil {
			return dash
		}
		return t.rate(r.rcv.Rate)
	}}
}

// transferColumn is the bytes received, shown from rank on.
func transferColumn(rank int) column {
	return column{head: "Transfer", width: 9, rank: rank, cell: func(_ *Text, r *row) string {
		if r.sum != nil {
			if r.sum.rcvSeen == 0 {
				return dash
			}
			return r.sum.bytes.V.Decimal()
		}
		if r.rcv == nil {
			return dash
		}
		return r.rcv.Bytes.Decimal()
	}}
}

// udpColumns are the interval table's columns for a UDP test.
func udpColumns(spanWidth int) []column {
	return []column{
		{head: "Interval", width: spanWidth, left: true, cell: func(_ *Text, r *row) string { return r.span }},
		{head: "Sent", width: 12, cell: func(t *Text, r *row) string {
			if r.sum != nil {
				return t.optRate(r.sum.written, r.sum.sndSeen)
			}
			if r.snd == nil {
				return dash
			}
			return t.rate(r.snd.Rate)
		}},
		receivedColumn(),
		transferColumn(1),
		{head: "Datagrams", width: 9, cell: func(_ *Text, r *row) string {
			if d := sentOf(r); d != nil {
				return fmt.Sprint(d.Packets)
			}
			return dash
		}},
		{head: "Lost", width: 6, cell: func(_ *Text, r *row) string {
			if d := receivedOf(r); d != nil {
				return fmt.Sprint(d.Lost)
			}
			return dash
		}},
		{head: "Loss", width: 7, cell: func(_ *Text, r *row) string {
			if d := receivedOf(r); d != nil {
				return fmt.Sprintf("%.3g%%", 100*d.LossRate())
			}
			return dash
		}},
		{head: "Jitter", width: 9, cell: func(_ *Text, r *row) string {
			if d := receivedOf(r); d != nil {
				return fmtJitter(d.Jitter)
			}
			return dash
		}},
		{head: "Late", width: 6, rank: 2, cell: func(_ *Text, r *row) string {
			if d := receivedOf(r); d != nil {
				return fmt.Sprint(d.OutOfOrder)
			}
			return dash
		}},
		{head: "Drops", width: 6, rank: 3, cell: func(_ *Text, r *row) string {
			if d := receivedOf(r); d != nil {
				if v, ok := d.SocketDrops.Get(); ok {
					return fmt.Sprint(v)
				}
			}
			return dash
		}},
	}
}

func (t *Text) optRate(r model.Opt[model.Bitrate], seen int) string {
	if !r.OK || seen == 0 {
		return dash
	}
	return t.rate(r.V)
}

// kernelOf is an end's kernel sample at the end of the interval, nil
// where the end was not read (a stock iperf3 peer, a UDP test).
func kernelOf(si *model.StreamInterval) *model.Sample {
	if si == nil || si.UDP != nil || si.TCP.KernelLen == 0 {
		return nil
	}
	return &si.TCP
}

// blankOnSum is a per-stream column's cell on a sum row (nothing to
// add up), or the mark of a figure the stream's end did not report.
func blankOnSum(r *row) string {
	if r.sum != nil {
		return ""
	}
	return dash
}

func sentOf(r *row) *model.Datagrams {
	if r.sum != nil {
		return r.sum.sent
	}
	if r.snd == nil {
		return nil
	}
	return r.snd.UDP
}

func receivedOf(r *row) *model.Datagrams {
	if r.sum != nil {
		return r.sum.rcvd
	}
	if r.rcv == nil {
		return nil
	}
	return r.rcv.UDP
}

// topLimit names what held the sender back longest in the interval and
// for what share of it: the interval's verdict in a word.
func topLimit(l model.Limited) string {
	name, v := "rwnd", l.Rwnd
	for _, c := range []struct {
		name string
		v    float64
	}{{"sndbuf", l.Sndbuf}, {"cwnd", l.Cwnd}, {"app", l.App}} {
		if c.v > v {
			name, v = c.name, c.v
		}
	}
	return fmt.Sprintf("%s %.0f%%", name, 100*v)
}

// chooseColumns keeps the essential columns and adds the others by rank
// while a line stays within width.
func chooseColumns(all []column, width int) []column {
	used := idWidth
	for i, c := range all {
		if c.rank == 0 {
			used += 1 + c.width
			if c.left && i > 0 {
				used++
			}
		}
	}
	on := map[int]bool{}
	for rank := 1; ; rank++ {
		found := false
		for i, c := range all {
			if c.rank != rank {
				continue
			}
			found = true
			if used+1+c.width <= width {
				used += 1 + c.width
				on[i] = true
			}
		}
		if !found {
			break
		}
	}
	var out []column
	for i, c := range all {
		if c.rank == 0 || on[i] {
			out = append(out, c)
		}
	}
	return out
}

// idWidth is the width of the first column, "[  1]".
const idWidth = 5

// line lays out cells under the columns: words left aligned, figures
// right aligned; trailing blanks go.
func (t *Text) line(id string, cells []string) string {
	var b strings.Builder
	b.WriteString(id)
	for i, c := range t.cols {
		b.WriteByte(' ')
		pad := strings.Repeat(" ", max(c.width-utf8.RuneCountInString(cells[i]), 0))
		if c.left {
			if i > 0 {
				b.WriteByte(' ') // a word stands apart from the figures
			}
			b.WriteString(cells[i] + pad)
		} else {
			b.WriteString(pad + cells[i])
		}
	}
	return strings.TrimRight(b.String(), " ")
}

func (t *Text) header() string {
	heads := make([]string, len(t.cols))
	for i, c := range t.cols {
		heads[i] = c.head
	}
	return t.line("[ ID]", heads)
}

func (t *Text) printRow(r *row) {
	cells := make([]string, len(t.cols))
	for i, c := range t.cols {
		cells[i] = c.cell(t, r)
	}
	fmt.Fprintln(t.w, t.line(r.id, cells))
	if t.opt.Verbose && r.sum == nil {
		t.detail(r)
	}
}

// spanWidth is the width of the interval column: fmtSpan keeps a span
// within 13 columns for tests up to a day long, and an omitted
// interval's mark takes one more.
func spanWidth(c *model.TestConfig) int {
	if c.Omit > 0 {
		return 14
	}
	return 13
}

// fmtSpan is an interval's place in the test, in seconds: to the
// hundredth below 100 s, then to the tenth, and from 1000 s whole seconds
// where the intervals are whole seconds (so "3600-3601 s").
func fmtSpan(iv *model.Interval, every time.Duration) string {
	prec := 2
	switch end := iv.End.Seconds(); {
	case end >= 1000 && every%time.Second == 0:
		prec = 0
	case end >= 100:
		prec = 1
	}
	s := fmt.Sprintf("%.*f-%.*f s", prec, iv.Start.Seconds(), prec, iv.End.Seconds())
	if iv.Omitted {
		s += "*"
	}
	return s
}

// detail prints, under a stream's row, each end's further variables
// (-V): what the row has no room for, wrapped to the width.
func (t *Text) detail(r *row) {
	if r.snd != nil {
		t.wrapped("      ", "        ", strings.Join(t.senderDetail(r.snd), ", "))
	}
	if r.rcv != nil {
		t.wrapped("      ", "        ", strings.Join(t.receiverDetail(r.rcv), ", "))
	}
}

// senderDetail is a sender's variables for -V. Counters the kernel keeps
// over the connection's life say so ("so far"); the rest are this
// interval's, or the state at its end.
func (t *Text) senderDetail(si *model.StreamInterval) []string {
	out := []string{fmt.Sprintf("sender: wrote %s (%s)", si.Bytes.Decimal(), t.rate(si.Rate))}
	if a, ok := si.AckedBytes.Get(); ok {
		out = append(out, "acked "+a.Decimal())
	}
	if d := si.UDP; d != nil {
		return append(out, fmt.Sprintf("datagrams %d", d.Packets))
	}
	s := kernelOf(si)
	if s == nil {
		return append(out, "kernel "+notMeasured)
	}
	if v, ok := si.RetransBytes.Get(); ok {
		out = append(out, "retrans "+v.Decimal())
	}
	if l, ok := si.Limited.Get(); ok {
		out = append(out, fmt.Sprintf("limited rwnd %.0f%% sndbuf %.0f%% cwnd %.0f%% app %.0f%%", 100*l.Rwnd, 100*l.Sndbuf, 100*l.Cwnd, 100*l.App))
	}
	if w, ok := s.SndWnd.Get(); ok {
		out = append(out, "peer window "+w.Binary())
	}
	if m, ok := s.MinRTT.Get(); ok {
		out = append(out, "min RTT "+fmtDur(m))
	}
	ss := "∞"
	if v, ok := s.SsthreshBytes().Get(); ok {
		ss = v.Binary()
	}
	out = append(out, "ssthresh "+ss, "rttvar "+fmtDur(s.RTTVar), "rto "+fmtDur(s.RTO),
		fmt.Sprintf("lost %d now", s.Lost), fmt.Sprintf("reordering %d", s.Reordering))
	if v, ok := s.ReordSeen.Get(); ok {
		out = append(out, fmt.Sprintf("reord_seen %d so far", v))
	}
	if v, ok := s.DSACKDups.Get(); ok {
		out = append(out, fmt.Sprintf("dsack_dups %d so far", v))
	}
	if v, ok := s.DeliveryRate.Get(); ok {
		d := "delivery " + t.rate(v)
		if s.DeliveryRateAppLimited {
			d += " (app-limited)"
		}
		out = append(out, d)
	}
	if v, ok := s.PacingRate.Get(); ok {
		out = append(out, "pacing "+t.rate(v))
	}
	out = append(out, "unacked "+s.UnackedBytes().Decimal())
	if v, ok := s.NotsentBytes.Get(); ok {
		out = append(out, "notsent "+v.Decimal())
	}
	out = append(out, fmt.Sprintf("pmtu %d B", s.PMTU), fmt.Sprintf("mss %d B", s.SndMSS), s.Options.String(),
		"cc "+s.Congestion, "ca_state "+s.CAState.String())
	if s.BBR != nil {
		out = append(out, fmt.Sprintf("bbr %s bw %s min_rtt %s", s.BBR.Mode(), t.rate(s.BBR.BW), fmtDur(s.BBR.MinRTT)))
	}
	return out
}

// receiverDetail is a receiver's variables for -V.
func (t *Text) receiverDetail(si *model.StreamInterval) []string {
	out := []string{fmt.Sprintf("receiver: read %s (%s)", si.Bytes.Decimal(), t.rate(si.Rate))}
	if d := si.UDP; d != nil {
		drops := notMeasured
		if v, ok := d.SocketDrops.Get(); ok {
			drops = fmt.Sprint(v)
		}
		return append(out, fmt.Sprintf("datagrams %d expected", d.Packets), fmt.Sprintf("lost %d", d.Lost),
			fmt.Sprintf("late %d", d.OutOfOrder), "jitter "+fmtJitter(d.Jitter), "socket drops "+drops)
	}
	s := kernelOf(si)
	if s == nil {
		return append(out, "kernel "+notMeasured)
	}
	wnd := s.RcvSpace.Binary()
	if w, ok := s.RcvWnd.Get(); ok {
		wnd = w.Binary()
	}
	out = append(out, "window "+wnd)
	if s.RcvRTT > 0 {
		out = append(out, "rcv_rtt "+fmtDur(s.RcvRTT))
	}
	if n, ok := si.OutOfOrder.Get(); ok {
		out = append(out, fmt.Sprintf("out of order %d", n))
	}
	return append(out, "rcv_space "+s.RcvSpace.Binary(), "rcv_ssthresh "+s.RcvSsthresh.Binary(),
		fmt.Sprintf("rcv_mss %d B", s.RcvMSS), fmt.Sprintf("advmss %d B", s.AdvMSS), "ato "+fmtDur(s.ATO), s.Options.String())
}
