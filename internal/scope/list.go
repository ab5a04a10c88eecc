package scope

import (
	"fmt"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/columns"
	"github.com/tcpscope/tcpscope/internal/watch"
)

// Picker is the connection list with a chosen row, as Web100's main
// window: the arrow keys move the choice, Enter follows the chosen one.
// The choice stays with its connection, by cookie, while the list is
// re-sorted by rate from one sample to the next.
type Picker struct {
	// All shows idle connections too (watch -a); otherwise those idle
	// over Span (watch.ListRow.Idle) are hidden and counted.
	All  bool
	Span time.Duration
	// Filter is the filter's text, for the header.
	Filter string

	rows   []watch.ListRow
	at     time.Duration
	hidden int
	cursor int
	cookie uint64
	top    int
	seen   bool
	Err    error
}

// Set takes a new list.
func (p *Picker) Set(l watch.List) {
	p.seen, p.at, p.hidden = true, l.At, 0
	p.rows = p.rows[:0]
	for i := range l.Rows {
		if !p.All && l.Rows[i].Idle(p.Span) {
			p.hidden++
			continue
		}
		p.rows = append(p.rows, l.Rows[i])
	}
	for i := range p.rows {
		if p.rows[i].Cookie == p.cookie {
			p.cursor = i
			return
		}
	}
	// The chosen connection is gone (or none was): the same place.
	p.cursor = min(p.cursor, max(len(p.rows)-1, 0))
	if len(p.rows) > 0 {
		p.cookie = p.rows[p.cursor].Cookie
	}
}

// Move moves the choice by d rows, within the list.
func (p *Picker) Move(d int) {
	if len(p.rows) == 0 {
		return
	}
	p.cursor = min(max(p.cursor+d, 0), len(p.rows)-1)
	p.cookie = p.rows[p.cursor].Cookie
}

// Chosen is the chosen connection; false when the list is empty.
func (p *Picker) Chosen() (watch.ListRow, bool) {
	if len(p.rows) == 0 {
		return watch.ListRow{}, false
	}
	return p.rows[p.cursor], true
}

// RenderPicker draws the picker for a screen of width × height cells: a
// header, the keys, and as many rows as fit, the chosen one marked and
// kept in view (the first row shown is kept in p for the next picture,
// so the list scrolls only as the choice moves).
func RenderPicker(p *Picker, width, height int) string {
	width = max(width, 40)
	th := newTheme()
	var b strings.Builder
	what := "all but listeners and time-wait"
	switch {
	case p.Filter != "":
		what = p.Filter
	case p.All:
		what = "every socket"
	}
	if !p.seen {
		b.WriteString("tcpscope watch: reading the connections…\n")
		if p.Err != nil {
			fmt.Fprintf(&b, "error: %v\n", p.Err)
		}
		return b.String()
	}
	head := []string{
		th.title.Render(clip(fmt.Sprintf("tcpscope watch: %d connections (%s) at t=%.1fs", len(p.rows), what, p.at.Seconds()), width)),
		th.dim.Render(clip("↑/↓ or j/k: choose  Enter: follow  q: quit", width)),
	}
	if p.hidden > 0 {
		head = append(head, th.dim.Render(clip(fmt.Sprintf("%d idle hidden (nothing sent, received or queued for %v; -a shows them)", p.hidden, p.Span), width)))
	}
	room := height - len(head) - 1
	if height <= 0 {
		room = len(p.rows)
	}
	room = max(room, 1)
	// Keep the chosen row in view, scrolling as little as can be.
	p.top = min(max(p.top, p.cursor-room+1), p.cursor)
	p.top = max(min(p.top, len(p.rows)-room), 0)
	shown := p.rows[p.top:min(p.top+room, len(p.rows))]
	// The columns as wide as the rows shown need.
	cells := [][]string{{" ", "local", "remote", "state", "goodput", "", "RTT", "cwnd", "retr", "process"}}
	for i := range shown {
		r := &shown[i]
		mark := " "
		if p.top+i == p.cursor {
			mark = "▸"
		}
		dir := "←"
		if r.Sending {
			dir = "→"
		}
		proc := ""
		if r.PID != 0 {
			proc = fmt.Sprintf("%s/%d", r.Process, r.PID)
		}
		state := r.TCP.State.String()
		if state == "established" {
			state = "estab" // as ss writes it: the column is narrower
		}
		rate, retr := r.Rate.String(), fmt.Sprint(r.Retrans)
		if r.New || !r.TCP.BytesAcked.OK && !r.TCP.BytesReceived.OK {
			// Not measured yet (a first sample), or nothing to measure
			// by: absent, not 0.
			rate, dir, retr = "-", "", "-"
		}
		cwnd := "-" // no tcp_info (time-wait): last_data_sent is absent exactly then
		if r.TCP.LastDataSent.OK {
			cwnd = r.TCP.CwndBytes().Binary()
		}
		cells = append(cells, []string{mark, r.Local.String(), r.Remote.String(), state, rate, dir,
			rttText(r.TCP.RTT), cwnd, retr, proc})
	}
	widths := make([]int, len(cells[0]))
	for _, row := range cells {
		for j, c := range row {
			widths[j] = max(widths[j], len([]rune(c)))
		}
	}
	// Left-aligned: the mark, addresses, state and process; the numbers
	// right-aligned.
	left := []bool{true, true, true, true, false, true, false, false, false, true}
	// On a narrow screen columns give way, the follow view's detail
	// first (retr, cwnd, RTT, state), so that the process stays, as in
	// the piped list (report.WatchList). Columns are a space apart: each
	// takes its width and a space, the line one space less.
	keep, _ := columns.Fit(widths, 1, width+1, []int{8, 7, 6, 3})
	line := func(row []string) string {
		var l strings.Builder
		for j, c := range row {
			if !keep[j] {
				continue
			}
			if j > 0 {
				l.WriteString(" ")
			}
			pad := strings.Repeat(" ", widths[j]-len([]rune(c)))
			if left[j] {
				l.WriteString(c + pad)
			} else {
				l.WriteString(pad + c)
			}
		}
		return clip(l.String(), width)
	}
	for _, h := range head {
		b.WriteString(h + "\n")
	}
	b.WriteString(th.label.Render(line(cells[0])) + "\n")
	if len(p.rows) == 0 {
		b.WriteString(th.dim.Render("no connection to show") + "\n")
	}
	for i, row := range cells[1:] {
		l := line(row)
		if p.top+i == p.cursor {
			l = th.chosen.Render(l)
		}
		b.WriteString(l + "\n")
	}
	if p.Err != nil {
		fmt.Fprintf(&b, "error: %v\n", p.Err)
	}
	return b.String()
}

// rttText is an RTT as the list shows it: "-" when the kernel has none.
func rttText(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return dur(d)
}

// clip cuts s to width cells (runes: the view draws no wide characters).
func clip(s string, width int) string {
	r := []rune(strings.TrimRight(s, " "))
	if len(r) > width {
		return string(r[:width-1]) + "…"
	}
	return string(r)
}
