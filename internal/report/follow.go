package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/watch"
)

// This file is a followed connection's text (tcpscope watch --conn, and
// tcpscope replay): a table with a row a sample, its columns chosen to
// fit the width as the test's interval table's are, and the prose around
// it wrapped as the test's is. The full detail is the JSON stream's.

// WatchFollow writes a followed connection's frames as lines: what it
// is, a row a sample under a header, the running diagnosis whenever its
// primary finding changes, and the last numbers of a connection that
// closed. Every line fits Width.
type WatchFollow struct {
	Out io.Writer
	// Width is the width the lines fit, in runes; below 80 (or 0) it is
	// 80. The essential columns (goodput, cwnd, the peer's window, RTT,
	// retransmissions, what limited the sender, data unread) fit 80; a
	// wider width adds the others while they fit.
	Width int

	cols    []followColumn
	last    *watch.Row
	lastAt  time.Duration
	headed  bool // the header is printed for the connection followed
	primary string
}

// Write writes one frame.
func (v *WatchFollow) Write(fr watch.Frame) error {
	if v.cols == nil {
		v.Width = max(v.Width, MinWidth)
		v.cols = chooseFollowColumns(v.Width)
	}
	var b strings.Builder
	v.frame(&b, fr)
	_, err := io.WriteString(v.Out, b.String())
	return err
}

// frame lays out one frame's lines in b.
func (v *WatchFollow) frame(b *strings.Builder, fr watch.Frame) {
	if len(fr.Rows) == 0 {
		if v.last != nil {
			v.closed(b, "connection closed")
			v.last = nil
		}
		return
	}
	r := fr.Rows[0]
	if len(fr.Closed) > 0 && v.last != nil {
		// The followed connection closed and another match took its
		// place.
		v.closed(b, fmt.Sprintf("%s → %s closed", v.last.Local, v.last.Remote))
		v.primary = ""
	}
	if r.New {
		v.last, v.lastAt = &r, fr.At
		proc := ""
		if r.PID != 0 {
			proc = fmt.Sprintf(", process %s/%d", r.Process, r.PID)
		}
		v.wrapped(b, "", "  ", fmt.Sprintf("following %s → %s (%s%s), options %s, mss %d B",
			r.Local, r.Remote, r.TCP.Congestion, proc, r.TCP.Options, r.TCP.SndMSS))
		v.header(b)
		return
	}
	if !v.headed {
		v.header(b) // a recording that starts past a first sample
	}
	v.last, v.lastAt = &r, fr.At
	v.row(b, fr.At, &r)
	if len(fr.Diagnosis) > 0 && fr.Diagnosis[0].ID != v.primary {
		v.primary = fr.Diagnosis[0].ID
		v.wrapped(b, "  diagnosis: ", "    ", fr.Diagnosis[0].ID+": "+fr.Diagnosis[0].Summary)
	}
}

// closed writes what is said when the followed connection closes: its
// last sample's row again, its numbers being the final ones.
func (v *WatchFollow) closed(b *strings.Builder, what string) {
	v.wrapped(b, "", "  ", what+"; its last sample:")
	v.row(b, v.lastAt, v.last)
	v.headed = false
}

// wrapped writes s after first, broken at spaces to the width, lines
// after the first starting with indent.
func (v *WatchFollow) wrapped(b *strings.Builder, first, indent, s string) {
	for _, l := range wrap(first+s, v.Width, indent) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
}

func (v *WatchFollow) header(b *strings.Builder) {
	heads := make([]string, len(v.cols))
	for i, c := range v.cols {
		heads[i] = c.head
	}
	b.WriteString(followLine(v.cols, heads))
	b.WriteByte('\n')
	v.headed = true
}

func (v *WatchFollow) row(b *strings.Builder, at time.Duration, r *watch.Row) {
	cells := make([]string, len(v.cols))
	for i, c := range v.cols {
		cells[i] = c.cell(at, r)
	}
	b.WriteString(followLine(v.cols, cells))
	b.WriteByte('\n')
}

// followColumn is a column of the followed connection's table; like the
// interval table's, rank 0 is always shown and wider lines add the
// others, lowest rank first.
type followColumn struct {
	head  string
	width int
	rank  int
	left  bool
	cell  func(at time.Duration, r *watch.Row) string
}

// followColumns are the table's columns, in the order they print. What
// nobody measured is "-": a rate and retransmissions on a connection's
// first sample, or without the kernel's byte counters; the shares of
// time limited when the connection was not sending (they are the
// sender's); a window or queue the kernel did not give.
func followColumns() []followColumn {
	counted := func(r *watch.Row) bool {
		return !r.New && (r.TCP.BytesAcked.OK || r.TCP.BytesReceived.OK)
	}
	bytes := func(o model.Opt[model.Bytes]) string {
		if v, ok := o.Get(); ok {
			return v.Binary()
		}
		return dash
	}
	rate := func(o model.Opt[model.Bitrate]) string {
		if v, ok := o.Get(); ok {
			return v.String()
		}
		return dash
	}
	share := func(f func(model.Limited) float64) func(time.Duration, *watch.Row) string {
		return func(_ time.Duration, r *watch.Row) string {
			if l, ok := r.Limited.Get(); ok && r.Sending && counted(r) {
				return fmt.Sprintf("%.0f", 100*f(l))
			}
			return dash
		}
	}
	return []followColumn{
		{head: "time", width: 8, cell: func(at time.Duration, _ *watch.Row) string { return fmtAt(at) }},
		{head: "goodput", width: 11, cell: func(_ time.Duration, r *watch.Row) string {
			if !counted(r) {
				return dash
			}
			return r.Rate.String()
		}},
		{head: "", width: 1, cell: func(_ time.Duration, r *watch.Row) string {
			switch {
			case !counted(r):
				return ""
			case r.Sending:
				return "→"
			}
			return "←"
		}},
		{head: "cwnd", width: 8, cell: func(_ time.Duration, r *watch.Row) string {
			if r.TCP.KernelLen == 0 {
				return dash
			}
			return r.TCP.CwndBytes().Binary()
		}},
		{head: "peer wnd", width: 8, cell: func(_ time.Duration, r *watch.Row) string { return bytes(r.TCP.SndWnd) }},
		{head: "RTT", width: 8, cell: func(_ time.Duration, r *watch.Row) string { return watchRTT(r.TCP.RTT) }},
		{head: "minRTT", width: 8, rank: 1, cell: func(_ time.Duration, r *watch.Row) string {
			if m, ok := r.TCP.MinRTT.Get(); ok {
				return watchRTT(m)
			}
			return dash
		}},
		{head: "retr", width: 5, cell: func(_ time.Duration, r *watch.Row) string {
			if !counted(r) {
				return dash
			}
			return strconv.FormatUint(uint64(r.Retrans), 10)
		}},
		{head: "unacked", width: 8, rank: 2, cell: func(_ time.Duration, r *watch.Row) string {
			if r.TCP.KernelLen == 0 {
				return dash
			}
			return r.TCP.UnackedBytes().Binary()
		}},
		{head: "ssthresh", width: 8, rank: 3, cell: func(_ time.Duration, r *watch.Row) string {
			if r.TCP.KernelLen == 0 {
				return dash
			}
			if v, ok := r.TCP.SsthreshBytes().Get(); ok {
				return v.Binary()
			}
			return "∞" // not set yet: still in the first slow start
		}},
		{head: "notsent", width: 8, rank: 5, cell: func(_ time.Duration, r *watch.Row) string { return bytes(r.TCP.NotsentBytes) }},
		{head: "unread", width: 8, cell: func(_ time.Duration, r *watch.Row) string { return bytes(r.TCP.RecvQ) }},
		{head: "delivery", width: 11, rank: 6, cell: func(_ time.Duration, r *watch.Row) string { return rate(r.TCP.DeliveryRate) }},
		{head: "pacing", width: 11, rank: 7, cell: func(_ time.Duration, r *watch.Row) string { return rate(r.TCP.PacingRate) }},
		{head: "limited", width: 11, left: true, cell: func(_ time.Duration, r *watch.Row) string {
			if l, ok := r.Limited.Get(); ok && r.Sending && counted(r) {
				return topLimit(l)
			}
			return dash
		}},
		{head: "rwnd%", width: 5, rank: 4, cell: share(func(l model.Limited) float64 { return l.Rwnd })},
		{head: "sndbuf%", width: 7, rank: 4, cell: share(func(l model.Limited) float64 { return l.Sndbuf })},
		{head: "cwnd%", width: 5, rank: 4, cell: share(func(l model.Limited) float64 { return l.Cwnd })},
		{head: "app%", width: 4, rank: 4, cell: share(func(l model.Limited) float64 { return l.App })},
	}
}

// chooseFollowColumns keeps the essential columns and adds the others
// by rank while a line stays within width.
func chooseFollowColumns(width int) []followColumn {
	all := followColumns()
	cost := func(i int) int {
		c := all[i]
		n := c.width
		if i > 0 {
			n++
		}
		if c.left && i > 0 {
			n++
		}
		return n
	}
	on := make([]bool, len(all))
	used := 0
	for i, c := range all {
		if c.rank == 0 {
			on[i] = true
			used += cost(i)
		}
	}
	for rank := 1; ; rank++ {
		// A rank's columns come together or not at all: the four
		// shares of time limited are one figure.
		need, found := 0, false
		for i, c := range all {
			if c.rank == rank {
				need += cost(i)
				found = true
			}
		}
		if !found {
			break
		}
		if used+need > width {
			continue
		}
		used += need
		for i, c := range all {
			if c.rank == rank {
				on[i] = true
			}
		}
	}
	var out []followColumn
	for i, c := range all {
		if on[i] {
			out = append(out, c)
		}
	}
	return out
}

// followLine lays cells out under cols: figures right aligned, words
// left aligned and a space further apart; trailing blanks go.
func followLine(cols []followColumn, cells []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		pad := strings.Repeat(" ", max(c.width-utf8.RuneCountInString(cells[i]), 0))
		if c.left {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(cells[i] + pad)
		} else {
			b.WriteString(pad + cells[i])
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// fmtAt is a sample's time since the watch began, within 8 columns for
// watches up to 115 days: to the hundredth of a second below 1000 s,
// then to the tenth, then whole seconds.
func fmtAt(at time.Duration) string {
	s := at.Seconds()
	prec := 2
	switch {
	case s >= 100000:
		prec = 0
	case s >= 1000:
		prec = 1
	}
	return strconv.FormatFloat(s, 'f', prec, 64) + "s"
}

// WatchNote writes one of watch's notes (which connection it follows,
// and which others match) as "tcpscope watch: " and the note, wrapped to
// width (80 below 80 or at 0), lines after the first indented. A quoted
// filter, and the option before it ("--conn \"sport 1 dport 2\""), are
// never broken: they are copied whole.
func WatchNote(w io.Writer, width int, note string) error {
	width = max(width, MinWidth)
	// Within a quoted filter, and between an option and its quoted
	// value, spaces are no-break spaces while the note is wrapped.
	const nbsp = "\u00a0"
	var b strings.Builder
	quoted := false
	for i, r := range note {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && (quoted || strings.HasPrefix(note[i+1:], `"`) && optionBefore(note[:i])):
			b.WriteString(nbsp)
			continue
		}
		b.WriteRune(r)
	}
	var out strings.Builder
	for _, l := range wrap("tcpscope watch: "+b.String(), width, "  ") {
		out.WriteString(strings.ReplaceAll(l, nbsp, " "))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// optionBefore reports s ending in an option ("--conn").
func optionBefore(s string) bool {
	word := s[strings.LastIndexByte(s, ' ')+1:]
	return strings.HasPrefix(word, "-")
}
