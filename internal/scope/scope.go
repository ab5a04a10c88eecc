// Package scope is the TCP oscilloscope's terminal view, like Web100's:
// a picker over the host's connections (the list, fastest first; arrow
// keys or j/k choose one, Enter follows it, Esc comes back, q quits) and
// the follow view of one connection: goodput, retransmissions, cwnd
// against the peer's window, RTT, the limited-by breakdown, negotiated
// options and the running diagnosis, redrawn as samples arrive, or (v)
// every kernel variable of it with its unit, absent ones said absent
// (bubbletea). Render, RenderPicker and Variables are functions of
// the samples and the screen size, so the pictures are tested without a
// terminal; Run wires them to one and reads no socket: its Sources do.
package scope

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/watch"
)

// Source gives the next frame of the followed connection; a frame with no
// rows means it closed.
type Source func() (watch.Frame, error)

// State is what the view shows: the followed connection's frames so far.
type State struct {
	Frames []watch.Frame
	Closed bool
	Err    error
	// Note says which connection is followed when the filter matched
	// others, or that another took the place of one that closed.
	Note string
	// Vars shows the "all variables" pane instead of the charts, from
	// its row VarsTop.
	Vars    bool
	VarsTop int
	// Back: Esc goes back to the connection list.
	Back bool
}

// keep is how many frames the view holds: more than any screen is wide.
const keep = 1000

// Add appends a frame.
func (s *State) Add(f watch.Frame) {
	if len(f.Rows) == 0 {
		s.Closed = true
		return
	}
	if n := len(s.Frames); n > 0 && s.Frames[n-1].Rows[0].Cookie != f.Rows[0].Cookie {
		// The followed connection closed and another match, still
		// busy, took its place: its own pictures, from its first sample.
		was, now := s.Frames[n-1].Rows[0], f.Rows[0]
		s.Note = fmt.Sprintf("%s → %s closed; following %s → %s, the busiest other match", was.Local, was.Remote, now.Local, now.Remote)
		s.Frames = s.Frames[:0]
	}
	s.Frames = append(s.Frames, f)
	if len(s.Frames) > keep {
		s.Frames = s.Frames[len(s.Frames)-keep:]
	}
}

// theme is the view's styles.
type theme struct {
	title, label, dim, crit, warn, info, chosen lipgloss.Style
}

func newTheme() theme {
	bold := lipgloss.NewStyle().Bold(true)
	return theme{title: bold, label: bold, dim: lipgloss.NewStyle().Faint(true),
		crit: bold.Foreground(lipgloss.Color("9")), warn: bold.Foreground(lipgloss.Color("11")),
		info: bold.Foreground(lipgloss.Color("10")), chosen: lipgloss.NewStyle().Reverse(true)}
}

// Render draws the state for a screen of width × height cells. Beside
// the text, it only keeps VarsTop within the pane's rows: how far the
// pane can scroll depends on the screen.
func Render(s *State, width, height int) string {
	width = max(width, 40)
	th := newTheme()
	var b strings.Builder
	if len(s.Frames) == 0 {
		b.WriteString("tcpscope watch: waiting for the first sample…\n")
		if s.Err != nil {
			fmt.Fprintf(&b, "error: %v\n", s.Err)
		}
		return b.String()
	}
	last := s.Frames[len(s.Frames)-1]
	r := last.Rows[0]
	t := &r.TCP
	proc := ""
	if r.PID != 0 {
		proc = fmt.Sprintf("  %s/%d", r.Process, r.PID)
	}
	cc := t.Congestion
	if t.BBR != nil {
		cc += " (" + t.BBR.Mode() + ")"
	}
	state := fmt.Sprintf("t=%.1fs", last.At.Seconds())
	if s.Closed {
		state = "closed"
	}
	keys := "v: variables  q: quit"
	if s.Vars {
		keys = "v: charts  j/k: scroll  q: quit"
	}
	if s.Back {
		keys = "Esc: list  " + keys
	}
	title := fmt.Sprintf("tcpscope watch  %s → %s", r.Local, r.Remote)
	rest := fmt.Sprintf("%s  %s  %s", proc, cc, state)
	b.WriteString(th.title.Render(title))
	if len([]rune(title+rest)) > width {
		// On a narrow screen the rest goes on a line of its own.
		rest = "\n" + strings.TrimLeft(rest, " ")
	}
	b.WriteString(rest + "\n")
	ecn := "off"
	if t.Options.ECN {
		ecn = "on"
	}
	fmt.Fprintf(&b, "options %s, MSS %d B, path MTU %d B, ECN %s\n", t.Options, t.SndMSS, t.PMTU, ecn)
	b.WriteString(th.dim.Render(keys) + "\n")
	if s.Note != "" {
		b.WriteString(th.dim.Render(strings.TrimRight(wrap(s.Note, width, ""), "\n")) + "\n")
	}
	b.WriteString("\n")
	if s.Vars {
		used := strings.Count(b.String(), "\n") + 1
		room := height - used
		if height <= 0 {
			room = 1 << 20
		}
		vars := Variables(t)
		text, rows := renderVars(th, vars, width, max(room, 1), s.VarsTop)
		s.VarsTop = max(min(s.VarsTop, rows-room), 0)
		b.WriteString(text)
		if rows > room && room > 0 {
			fmt.Fprintf(&b, "%s\n", th.dim.Render(fmt.Sprintf("rows %d–%d of %d (j/k)", s.VarsTop+1, min(s.VarsTop+room-1, rows), rows)))
		}
		return keepTo(b.String(), height)
	}

	chart := width - 28
	series := func(f func(*watch.Row) float64) []float64 {
		n := min(len(s.Frames), chart)
		out := make([]float64, 0, n)
		for _, fr := range s.Frames[len(s.Frames)-n:] {
			out = append(out, f(&fr.Rows[0]))
		}
		return out
	}
	dir := "recv"
	if r.Sending {
		dir = "sent"
	}
	rate := series(func(w *watch.Row) float64 { return float64(w.Rate) })
	retr := series(func(w *watch.Row) float64 { return float64(w.Retrans) })
	cwnd := series(func(w *watch.Row) float64 { return float64(w.TCP.CwndBytes()) })
	wnd := series(func(w *watch.Row) float64 { return float64(w.TCP.SndWnd.V) })
	rtt := series(func(w *watch.Row) float64 { return float64(w.TCP.RTT) })
	// cwnd and the peer's window share one scale: the seed's picture is
	// one line far above the other.
	wmax := math.Max(peak(cwnd), peak(wnd))
	line := func(label, value string, v []float64, top float64) {
		fmt.Fprintf(&b, "%s %-17s %s\n", th.label.Render(fmt.Sprintf("%-8s", label)), value, sparkline(v, top))
	}
	line("goodput", fmt.Sprintf("%s %s", model.Bitrate(rate[len(rate)-1]), dir), rate, peak(rate))
	line("retrans", fmt.Sprintf("%d (total %d)", r.Retrans, t.TotalRetrans), retr, peak(retr))
	line("cwnd", t.CwndBytes().Binary(), cwnd, wmax)
	line("peer wnd", t.SndWnd.V.Binary(), wnd, wmax)
	line("RTT", fmt.Sprintf("%s (min %s)", dur(t.RTT), dur(t.MinRTT.V)), rtt, peak(rtt))
	if q, ok := t.RecvQ.Get(); ok && !r.Sending {
		fmt.Fprintf(&b, "%s %s\n", th.label.Render("unread  "), q.Binary())
	}
	if l, ok := r.Limited.Get(); ok && r.Sending {
		fmt.Fprintf(&b, "%s %s\n", th.label.Render("limited "), breakdown(l, chart+18))
	}
	b.WriteString("\n")
	if len(last.Diagnosis) == 0 {
		b.WriteString(th.dim.Render("diagnosis: gathering evidence…") + "\n")
	} else {
		f := last.Diagnosis[0]
		fmt.Fprintf(&b, "%s %s [%s, %s confidence]\n", th.severity(f.Severity).Render("what limits it:"), f.ID, f.Severity, f.Confidence)
		b.WriteString(wrap(f.Summary, width, "  "))
		for _, x := range f.Fix {
			b.WriteString(wrap("fix ("+x.Where+"): "+x.Command, width, "  "))
		}
		if f.Effect != "" {
			b.WriteString(wrap("effect: "+f.Effect, width, "  "))
		}
		for _, g := range last.Diagnosis[1:] {
			b.WriteString(wrap(fmt.Sprintf("also %s: %s", g.ID, g.Summary), width, "  "))
		}
	}
	if s.Err != nil {
		fmt.Fprintf(&b, "error: %v\n", s.Err)
	}
	// Keep to the screen: the diagnosis is last and may be cut.
	return keepTo(b.String(), height)
}

// keepTo cuts text to height lines (none when height ≤ 0).
func keepTo(text string, height int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if height > 0 && len(lines) > height {
		lines = lines[:height]
	}
	return strings.Join(lines, "\n") + "\n"
}

func (th theme) severity(s model.Severity) lipgloss.Style {
	switch s {
	case model.Critical:
		return th.crit
	case model.Warning:
		return th.warn
	}
	return th.info
}

func peak(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// sparkline draws v as block characters scaled to top.
func sparkline(v []float64, top float64) string {
	const bars = "▁▂▃▄▅▆▇█"
	blocks := []rune(bars)
	var b strings.Builder
	for _, x := range v {
		i := 0
		if top > 0 {
			i = int(math.Round(x / top * float64(len(blocks)-1)))
		}
		b.WriteRune(blocks[min(max(i, 0), len(blocks)-1)])
	}
	return b.String()
}

// breakdown is the limited-by shares as a bar of width cells and numbers.
func breakdown(l model.Limited, width int) string {
	bar := max(width-44, 10)
	parts := []struct {
		name  string
		share float64
		ch    string
	}{{"rwnd", l.Rwnd, "R"}, {"sndbuf", l.Sndbuf, "S"}, {"cwnd", l.Cwnd, "C"}, {"app", l.App, "A"}}
	var b strings.Builder
	used := 0
	for _, p := range parts {
		n := int(math.Round(p.share * float64(bar)))
		n = min(n, bar-used)
		b.WriteString(strings.Repeat(p.ch, n))
		used += n
	}
	b.WriteString(strings.Repeat("·", bar-used))
	return fmt.Sprintf("%s rwnd %.0f%% sndbuf %.0f%% cwnd %.0f%% app %.0f%%", b.String(), 100*l.Rwnd, 100*l.Sndbuf, 100*l.Cwnd, 100*l.App)
}

func dur(d time.Duration) string {
	if d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(10 * time.Microsecond).String()
}

// wrap breaks s into lines of at most width cells, each indented.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(s) {
		if len([]rune(line))+len([]rune(w))+1 > width && strings.TrimSpace(line) != "" {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = indent
		}
		line += w + " "
	}
	if strings.TrimSpace(line) != "" {
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	return b.String()
}

// Sources are where the view's pictures come from (the cli wires them to
// watch sessions over sock_diag). Each call may block on I/O; the view
// makes one at a time, so sessions may share one source, and skips those
// asked for before the user switched views.
type Sources struct {
	// List reads the filter's connections as a list: the view opens on
	// it with a picker, unless Frames is set. Nil: no list (Esc quits).
	List func() (watch.List, error)
	// Follow starts following a connection chosen in the list; the
	// Source it returns gives its frames.
	Follow func(watch.ListRow) Source
	// Frames, if set, is a followed connection's (watch --conn): the
	// view opens on it.
	Frames Source
}

// Options are the view's settings.
type Options struct {
	// Interval is how often a followed connection is sampled; Refresh how
	// often the list is.
	Interval, Refresh time.Duration
	// Note is the follow view's Note to begin with.
	Note string
	// All shows idle connections in the list (watch -a).
	All bool
	// Filter is the filter's text, for the list's header.
	Filter string
}

// teaModel is the bubbletea model: the picker or the follow view.
type teaModel struct {
	src   Sources
	opt   Options
	width int
	// height is the screen's.
	height int
	// following: the follow view is up; otherwise the picker.
	following bool
	// gen counts the switches between the two: a sample asked for
	// before the last switch is dropped when it arrives.
	gen    int
	frames Source
	st     State
	pick   Picker
	// lists counts the lists read since the picker came up: the second
	// comes after Interval, for rates, the rest every Refresh.
	lists int
	// io holds the sources' calls one at a time; cur is gen for them,
	// read from the commands' goroutines.
	io  *sync.Mutex
	cur *atomic.Int64
}

type frameMsg struct {
	gen int
	f   watch.Frame
	err error
}

type listMsg struct {
	gen int
	l   watch.List
	err error
}

// call runs a source's call unless the view has switched since gen.
func (m *teaModel) call(gen int, f func()) bool {
	m.io.Lock()
	defer m.io.Unlock()
	if m.cur.Load() != int64(gen) {
		return false
	}
	f()
	return true
}

// frame asks the followed connection's source for a frame after d.
func (m *teaModel) frame(d time.Duration) tea.Cmd {
	gen, src := m.gen, m.frames
	get := func() tea.Msg {
		var f watch.Frame
		var err error
		if !m.call(gen, func() { f, err = src() }) {
			return nil
		}
		return frameMsg{gen, f, err}
	}
	if d == 0 {
		return get
	}
	return tea.Tick(d, func(time.Time) tea.Msg { return get() })
}

// list asks for a connection list after d.
func (m *teaModel) list(d time.Duration) tea.Cmd {
	gen, src := m.gen, m.src.List
	get := func() tea.Msg {
		var l watch.List
		var err error
		if !m.call(gen, func() { l, err = src() }) {
			return nil
		}
		return listMsg{gen, l, err}
	}
	if d == 0 {
		return get
	}
	return tea.Tick(d, func(time.Time) tea.Msg { return get() })
}

func (m *teaModel) Init() tea.Cmd {
	if m.following {
		return m.frame(0)
	}
	return m.list(0)
}

// follow opens the follow view on the chosen connection.
func (m *teaModel) follow() tea.Cmd {
	row, ok := m.pick.Chosen()
	if !ok || m.src.Follow == nil {
		return nil
	}
	m.switched()
	m.following, m.frames = true, m.src.Follow(row)
	m.st = State{Back: true, Vars: m.st.Vars}
	return m.frame(0)
}

// switched counts a switch of views.
func (m *teaModel) switched() {
	m.gen++
	m.cur.Store(int64(m.gen))
}

// back returns to the picker.
func (m *teaModel) back() tea.Cmd {
	m.switched()
	m.following, m.lists = false, 0
	return m.list(0)
}

func (m *teaModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
		return m, m.key(msg.String())
	case frameMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		if msg.err != nil {
			m.st.Err = msg.err
			if m.src.List != nil {
				return m, nil // Esc goes back to the list
			}
			return m, tea.Quit
		}
		m.st.Add(msg.f)
		if m.st.Closed {
			return m, nil // stays on screen with its last numbers
		}
		return m, m.frame(m.opt.Interval)
	case listMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.pick.Err = msg.err
		if msg.err != nil {
			return m, tea.Quit
		}
		m.pick.Set(msg.l)
		m.lists++
		if m.lists == 1 {
			return m, m.list(m.opt.Interval)
		}
		return m, m.list(m.opt.Refresh)
	}
	return m, nil
}

// key acts on a key press.
func (m *teaModel) key(k string) tea.Cmd {
	switch k {
	case "q", "ctrl+c":
		return tea.Quit
	}
	if !m.following {
		switch k {
		case "up", "k":
			m.pick.Move(-1)
		case "down", "j":
			m.pick.Move(1)
		case "pgup":
			m.pick.Move(-max(m.height-5, 1))
		case "pgdown":
			m.pick.Move(max(m.height-5, 1))
		case "home", "g":
			m.pick.Move(-1 << 30)
		case "end", "G":
			m.pick.Move(1 << 30)
		case "enter":
			return m.follow()
		}
		return nil
	}
	switch k {
	case "esc":
		if m.src.List == nil {
			return tea.Quit
		}
		return m.back()
	case "v":
		m.st.Vars = !m.st.Vars
	case "up", "k":
		m.st.VarsTop = max(m.st.VarsTop-1, 0)
	case "down", "j":
		m.st.VarsTop++
	}
	return nil
}

func (m *teaModel) View() tea.View {
	text := ""
	if m.following {
		text = Render(&m.st, m.width, m.height)
	} else {
		text = RenderPicker(&m.pick, m.width, m.height)
	}
	v := tea.NewView(text)
	v.AltScreen = true
	return v
}

// Run shows the view on the terminal in and out until the user quits: the
// picker on src.List, or, with src.Frames, the followed connection
// first. It returns the follow view's last state.
func Run(in io.Reader, out io.Writer, src Sources, opt Options) (*State, error) {
	m := newModel(src, opt)
	p := tea.NewProgram(m, tea.WithInput(in), tea.WithOutput(out))
	if _, err := p.Run(); err != nil {
		return &m.st, fmt.Errorf("terminal view: %w", err)
	}
	if m.pick.Err != nil {
		return &m.st, m.pick.Err
	}
	return &m.st, m.st.Err
}

func newModel(src Sources, opt Options) *teaModel {
	return &teaModel{src: src, opt: opt, width: 100, height: 40, following: src.Frames != nil, frames: src.Frames,
		io: &sync.Mutex{}, cur: &atomic.Int64{},
		st: State{Note: opt.Note, Back: src.List != nil}, pick: Picker{All: opt.All, Span: opt.Refresh, Filter: opt.Filter}}
}
