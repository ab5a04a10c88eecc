package report

import (
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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
	// Width is the width the lines fit, in runes (0: 80). On a narrow
	// screen columns give way (listDrop), then long IPv6 addresses and
	// process names are abbreviated; a wider one shows every column.
	Width int

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
	width := v.Width
	if width <= 0 {
		width = 80
	}
	head := fmt.Sprintf("tcpscope watch: %d connections () at %s", len(l.Rows), time.Now().Format("15:04:05"))
	if room := width - utf8.RuneCountInString(head); utf8.RuneCountInString(what) > room {
		// A long filter is cut, its start kept.
		what = string([]rune(what)[:max(room-1, 1)]) + "…"
	}
	b = fmt.Appendf(b, "tcpscope watch: %d connections (%s) at %s\n", len(l.Rows), what, time.Now().Format("15:04:05"))
	if hidden > 0 {
		b = fmt.Appendf(b, "%d idle connections hidden (nothing moved or queued for %v; -a shows them)\n", hidden, v.Refresh)
	}
	tables := listTables(l.Rows, cuts{})
	widths := columns.Widths(tables...)
	keep, line := columns.Fit(widths, listPadding, width, listDrop)
	if c := cutsFor(widths, line-width); line > width && c != (cuts{}) {
		// Every column that may go has gone: the addresses and the
		// process are cut to fit, with the same columns kept.
		tables = listTables(l.Rows, c)
	}
	b = columns.AppendColumns(b, keep, tables...)
	addrWidth := max((width-len("closed:  → "))/2, minAddrWidth)
	for _, r := range l.Closed {
		b = appendAddrPortIn(append(b, "closed: "...), r.Local, addrWidth)
		b = append(appendAddrPortIn(append(b, " → "...), r.Remote, addrWidth), '\n')
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

// The list's columns, and how far apart.
const (
	colLocal = iota
	colRemote
	colState
	colCC
	colGoodput
	colDir
	colRTT
	colCwnd
	colRetr
	colProcess
	listCols
	listPadding = 2
)

// listDrop is the order the list's columns give way in on a narrow
// screen: the congestion control, then as in the terminal picker the
// follow view's detail (retr, cwnd, RTT, state), so that who, how fast
// and which process stay.
var listDrop = []int{colCC, colRetr, colCwnd, colRTT, colState}

// minAddrWidth is as short as an address is cut (appendAddrPortIn): the
// longest IPv4 address and port, which are never cut. minProcessWidth is
// as short as a process is cut: a letter of its name, and its PID.
const (
	minAddrWidth    = len("255.255.255.255:65535")
	minProcessWidth = len("i…/4194304")
)

// cuts are the widths, in runes, the list's long cells are cut to (0:
// whole).
type cuts struct{ local, remote, process int }

// cutsFor is how the addresses and the process are cut to take excess
// runes off a line whose columns are widths: the wider address first,
// down to minAddrWidth, then the process, down to minProcessWidth. A line
// that is still too wide stays so.
func cutsFor(widths []int, excess int) cuts {
	w := [3]int{widths[colLocal], widths[colRemote], widths[colProcess]}
	for ; excess > 0; excess-- {
		i := colRemote - colLocal
		if w[0] > w[1] {
			i = 0
		}
		if w[i] <= minAddrWidth {
			if i = 2; w[2] <= minProcessWidth {
				break
			}
		}
		w[i]--
	}
	var c cuts
	if w[0] < widths[colLocal] {
		c.local = w[0]
	}
	if w[1] < widths[colRemote] {
		c.remote = w[1]
	}
	if w[2] < widths[colProcess] {
		c.process = w[2]
	}
	return c
}

// listTables lays the rows out in the list's columns, after its header,
// cut to c. A busy host's list has tens of thousands of rows: two
// goroutines format half each, on two CPUs when there are.
func listTables(rows []watch.ListRow, c cuts) []*columns.Table {
	half := len(rows) / 2
	if half < 1000 {
		half = len(rows)
	}
	var second *columns.Table
	var wg sync.WaitGroup
	if half < len(rows) {
		wg.Go(func() { second = listTable(rows[half:], false, c) })
	}
	first := listTable(rows[:half], true, c)
	wg.Wait()
	if second != nil {
		return []*columns.Table{first, second}
	}
	return []*columns.Table{first}
}

// listTable lays rows out in the list's columns, after its header when
// header is set, cut to c. A rate and the retransmissions since the last
// sample are absent ("-") on a connection's first sample and where the
// kernel gave no counters to take them from, and the cwnd without
// tcp_info (time-wait): none of them was measured, and none is 0.
func listTable(rows []watch.ListRow, header bool, c cuts) *columns.Table {
	t := columns.New(listCols, listPadding)
	t.Grow(len(rows)+1, 12)
	if header {
		for _, h := range []string{"local", "remote", "state", "cc", "goodput", "", "RTT", "cwnd", "retr", "process"} {
			t.Cell(h)
		}
	}
	var cell []byte
	for i := range rows {
		r := &rows[i]
		t.CellBytes(appendAddrPortIn(cell[:0], r.Local, c.local))
		t.CellBytes(appendAddrPortIn(cell[:0], r.Remote, c.remote))
		if r.TCP.State == model.TCPEstablished {
			t.Cell("estab") // as ss writes it: the column is narrower
		} else {
			t.Cell(r.TCP.State.String())
		}
		t.Cell(r.TCP.Congestion)
		counted := !r.New && (r.TCP.BytesAcked.OK || r.TCP.BytesReceived.OK)
		switch {
		case !counted:
			t.Cell("-")
			t.Cell("")
		case r.Sending:
			t.CellBytes(model.AppendRate(cell[:0], r.Rate, model.RateAuto))
			t.Cell("→")
		default:
			t.CellBytes(model.AppendRate(cell[:0], r.Rate, model.RateAuto))
			t.Cell("←")
		}
		t.Cell(watchRTT(r.TCP.RTT))
		// last_data_sent is absent exactly when the kernel gave no
		// tcp_info.
		if r.TCP.LastDataSent.OK {
			t.CellBytes(r.TCP.CwndBytes().AppendBinary(cell[:0]))
		} else {
			t.Cell("-")
		}
		if counted {
			t.CellBytes(strconv.AppendUint(cell[:0], uint64(r.Retrans), 10))
		} else {
			t.Cell("-")
		}
		cell = cell[:0]
		if r.PID != 0 {
			cell = appendProcessIn(cell, r.Process, r.PID, c.process)
		}
		t.CellBytes(cell)
	}
	return t
}

// appendAddrPortIn appends a's text, cut to width runes (0: whole) where
// it can be: an IPv6 address keeps its first groups, as many as fit, its
// last group and the port ("[2001:db8:85a3:…:7334]:443"), and its zone
// when a first group fits beside it ("[fe80::…:5a6b]:22" when not); an
// IPv4 address is never cut (minAddrWidth holds the longest).
func appendAddrPortIn(b []byte, a netip.AddrPort, width int) []byte {
	start := len(b)
	b = appendAddrPort(b, a)
	if width <= 0 || utf8.RuneCount(b[start:]) <= width || !a.Addr().Is6() {
		return b
	}
	addr := a.Addr().WithZone("").String()
	last := strings.LastIndexByte(addr, ':')
	port := ":" + strconv.Itoa(int(a.Port()))
	// "[" head "…" tail "]" port, head ending at a group's end.
	cut := func(tail string) (head string) {
		room := width - 2 - utf8.RuneCountInString(tail) - len(port) - 1
		head = addr[:max(min(room, last), 0)]
		return head[:strings.LastIndexByte(head, ':')+1]
	}
	tail := addr[last:]
	head := cut(tail)
	if z := a.Addr().Zone(); z != "" {
		if h := cut(tail + "%" + z); h != "" || head == "" {
			head, tail = h, tail+"%"+z
		}
	}
	b = append(append(append(b[:start], '['), head...), "…"...)
	return append(append(append(b, tail...), ']'), port...)
}

// appendProcessIn appends a process as name/PID, its name cut to make it
// width runes (0: whole), the PID whole.
func appendProcessIn(b []byte, name string, pid, width int) []byte {
	p := strconv.Itoa(pid)
	if n := utf8.RuneCountInString(name); width > 0 && n+1+len(p) > width {
		keep := max(width-1-len(p)-1, 1)
		if keep < n {
			name = string([]rune(name)[:keep]) + "…"
		}
	}
	return append(append(append(b, name...), '/'), p...)
}

// appendAddrPort appends a's text, as its String method gives it.
func appendAddrPort(b []byte, a netip.AddrPort) []byte {
	if !a.Addr().IsValid() {
		return append(b, "invalid AddrPort"...)
	}
	return a.AppendTo(b)
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
