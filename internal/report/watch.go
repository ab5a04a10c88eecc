package report

import (
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/tcpscope/tcpscope/internal/columns"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/watch"
)

// This file is tcpscope watch's text: the connection list, and a followed
// connection's lines. Its JSON lines are watch.Recorder's (the --record
// format), its terminal view is package scope.

// WatchList draws the connection list, at most every Refresh.
type WatchList struct {
	Out io.Writer
	// TTY clears the screen before each list.
	TTY bool
	// Refresh is how often the list is drawn; Interval how often it is
	// sampled.
	Refresh, Interval time.Duration
	// Filter is the filter's text, for the header ("" for none).
	Filter string
	// Prime skips the first list, whose rates are all zero, when lists
	// are drawn less often than sampled (not for a single list, -c 1).
	Prime bool
	// All lists every row (watch -a, whose dump has every state);
	// otherwise the connections idle over the last Refresh
	// (watch.ListRow.Idle) are left out, and counted.
	All bool

	lastDraw time.Duration
	frames   int
	buf      []byte // the last list's text, its memory reused
	kept     []watch.ListRow
}

// Write draws l, unless the last list was drawn less than Refresh ago.
func (v *WatchList) Write(l watch.List) error {
	v.frames++
	if v.frames == 1 && v.Refresh > v.Interval && v.Prime {
		// Rates need two samples: the first frame only primes them, and
		// the first list comes one interval later.
		v.lastDraw = l.At - v.Refresh
		return nil
	}
	if v.frames > 2 && l.At-v.lastDraw < v.Refresh {
		return nil
	}
	v.lastDraw = l.At
	b := v.buf[:0]
	if v.TTY {
		b = append(b, "\x1b[H\x1b[2J"...)
	}
	what := "all but listeners and time-wait"
	switch {
	case v.Filter != "":
		what = v.Filter
	case v.All:
		what = "every socket"
	}
	hidden := 0
	if !v.All {
		hidden = len(l.Rows)
		l.Rows = v.busy(l.Rows)
		hidden -= len(l.Rows)
	}
	b = fmt.Appendf(b, "tcpscope watch: %d connections (%s) at %s\n", len(l.Rows), what, time.Now().Format("15:04:05"))
	if hidden > 0 {
		b = fmt.Appendf(b, "%d idle connections hidden (nothing sent, received or queued for %v; -a shows them)\n", hidden, v.Refresh)
	}
	// A busy host's list has tens of thousands of rows: two goroutines
	// format half each, on two CPUs when there are.
	half := len(l.Rows) / 2
	if half < 1000 {
		half = len(l.Rows)
	}
	var second *columns.Table
	var wg sync.WaitGroup
	if half < len(l.Rows) {
		wg.Go(func() { second = listTable(l.Rows[half:], false) })
	}
	first := listTable(l.Rows[:half], true)
	wg.Wait()
	if second != nil {
		b = columns.AppendAll(b, first, second)
	} else {
		b = first.AppendTo(b)
	}
	for _, r := range l.Closed {
		b = appendAddrPort(append(b, "closed: "...), r.Local)
		b = append(appendAddrPort(append(b, " → "...), r.Remote), '\n')
	}
	v.buf = b
	_, err := v.Out.Write(b)
	return err
}

// busy is the rows not idle over the last refresh, in v's own slice: the
// list's rows are the session's.
func (v *WatchList) busy(rows []watch.ListRow) []watch.ListRow {
	v.kept = v.kept[:0]
	for i := range rows {
		if !rows[i].Idle(v.Refresh) {
			v.kept = append(v.kept, rows[i])
		}
	}
	return v.kept
}

// listTable lays rows out in the list's columns, after its header when
// header is set.
func listTable(rows []watch.ListRow, header bool) *columns.Table {
	t := columns.New(10, 2)
	t.Grow(len(rows)+1, 12)
	if header {
		for _, h := range []string{"local", "remote", "state", "cc", "goodput", "", "RTT", "cwnd", "retr", "process"} {
			t.Cell(h)
		}
	}
	var cell []byte
	for i := range rows {
		r := &rows[i]
		cell = appendAddrPort(cell[:0], r.Local)
		t.CellBytes(cell)
		cell = appendAddrPort(cell[:0], r.Remote)
		t.CellBytes(cell)
		t.Cell(r.TCP.State.String())
		t.Cell(r.TCP.Congestion)
		t.CellBytes(model.AppendRate(cell[:0], r.Rate, model.RateAuto))
		if r.Sending {
			t.Cell("→")
		} else {
			t.Cell("←")
		}
		t.Cell(watchRTT(r.TCP.RTT))
		t.CellBytes(r.TCP.CwndBytes().AppendBinary(cell[:0]))
		t.CellBytes(strconv.AppendUint(cell[:0], uint64(r.Retrans), 10))
		cell = cell[:0]
		if r.PID != 0 {
			cell = strconv.AppendInt(append(append(cell, r.Process...), '/'), int64(r.PID), 10)
		}
		t.CellBytes(cell)
	}
	return t
}

// appendAddrPort appends a's text, as its String method gives it.
func appendAddrPort(b []byte, a netip.AddrPort) []byte {
	if !a.Addr().IsValid() {
		return append(b, "invalid AddrPort"...)
	}
	return a.AppendTo(b)
}

// WatchFollow writes a followed connection's frames as lines: what it
// is, a line a sample, the running diagnosis whenever its primary finding
// changes, and the last numbers of a connection that closed.
type WatchFollow struct {
	Out io.Writer

	last    *watch.Row
	primary string
}

// Write writes one frame.
func (v *WatchFollow) Write(fr watch.Frame) error {
	if len(fr.Rows) == 0 {
		if v.last != nil {
			fmt.Fprintf(v.Out, "connection closed; last sample: %s\n", followLine(v.last))
		}
		return nil
	}
	r := fr.Rows[0]
	if len(fr.Closed) > 0 && v.last != nil {
		// The followed connection closed and another match took its
		// place.
		fmt.Fprintf(v.Out, "%s → %s closed; last sample: %s\n", v.last.Local, v.last.Remote, followLine(v.last))
		v.primary = ""
	}
	v.last = &r
	if r.New {
		proc := ""
		if r.PID != 0 {
			proc = fmt.Sprintf(", process %s/%d", r.Process, r.PID)
		}
		fmt.Fprintf(v.Out, "following %s → %s (%s%s), options %s, mss %d B\n", r.Local, r.Remote, r.TCP.Congestion, proc, r.TCP.Options, r.TCP.SndMSS)
		return nil
	}
	fmt.Fprintf(v.Out, "%7.2fs %s\n", fr.At.Seconds(), followLine(&r))
	if len(fr.Diagnosis) > 0 && fr.Diagnosis[0].ID != v.primary {
		v.primary = fr.Diagnosis[0].ID
		fmt.Fprintf(v.Out, "         diagnosis: %s: %s\n", fr.Diagnosis[0].ID, fr.Diagnosis[0].Summary)
	}
	return nil
}

// followLine is one sample of a followed connection.
func followLine(r *watch.Row) string {
	dir := "received"
	if r.Sending {
		dir = "sent"
	}
	s := fmt.Sprintf("%s %s, cwnd %s, peer window %s, RTT %s (min %s), retr %d", r.Rate, dir,
		r.TCP.CwndBytes().Binary(), r.TCP.SndWnd.V.Binary(), watchRTT(r.TCP.RTT), watchRTT(r.TCP.MinRTT.V), r.Retrans)
	if l, ok := r.Limited.Get(); ok && r.Sending {
		s += fmt.Sprintf(", limited rwnd %.0f%% sndbuf %.0f%% cwnd %.0f%% app %.0f%%", 100*l.Rwnd, 100*l.Sndbuf, 100*l.Cwnd, 100*l.App)
	}
	if q, ok := r.TCP.RecvQ.Get(); ok && !r.Sending {
		s += ", unread " + q.Binary()
	}
	return s
}

// watchRTT is an RTT as the list and the lines show it: "-" when the
// kernel has none.
func watchRTT(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	}
	return d.Round(10 * time.Microsecond).String()
}
