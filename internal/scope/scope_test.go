package scope

import (
	"net/netip"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/watch"
)

func TestSparklineAndBreakdown(t *testing.T) {
	if got := sparkline([]float64{0, 1, 2, 4, 8}, 8); got != "▁▂▃▄█" && got != "▁▂▃▅█" {
		t.Errorf("sparkline %q", got)
	}
	if got := sparkline([]float64{3, 3}, 0); got != "▁▁" {
		t.Errorf("zero scale %q", got)
	}
	b := breakdown(model.Limited{Rwnd: 0.5, Cwnd: 0.25, App: 0.25}, 64)
	if !strings.HasPrefix(b, strings.Repeat("R", 10)+strings.Repeat("C", 5)+strings.Repeat("A", 5)) || !strings.Contains(b, "rwnd 50%") {
		t.Errorf("breakdown %q", b)
	}
}

func TestRender(t *testing.T) {
	st := &State{}
	if !strings.Contains(Render(st, 100, 30), "waiting") {
		t.Error("empty state")
	}
	for i := range 5 {
		s := model.Socket{TCP: model.Sample{SndCwnd: uint32(10 * (i + 1)), SndMSS: 1448, SndWnd: model.Some[model.Bytes](65535),
			RTT: 20 * time.Millisecond, MinRTT: model.Some(20 * time.Millisecond)}}
		st.Add(watch.Frame{At: time.Duration(i) * time.Second, Rows: []watch.Row{{Socket: s, Sending: true, Rate: model.Bitrate(i) * model.MbitPerSecond,
			Limited: model.Some(model.Limited{Rwnd: 0.9, Cwnd: 0.1})}},
			Diagnosis: []model.Finding{{ID: "rwnd-limited", Severity: model.Critical, Confidence: model.High, Summary: "The receiver's window limits this transfer."}}})
	}
	out := Render(st, 100, 30)
	for _, want := range []string{"goodput", "4.00 Mbit/s sent", "peer wnd", "64.0 KiB", "rwnd 90%", "what limits it:", "rwnd-limited", "t=4.0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Count(Render(st, 100, 5), "\n"); lines > 5 {
		t.Errorf("%d lines on a 5-line screen", lines)
	}
	st.Add(watch.Frame{})
	if !st.Closed || !strings.Contains(Render(st, 100, 30), "closed") {
		t.Error("a closed connection is not shown as closed")
	}
}

// The view names the other matches when there were several, and when the
// followed connection closes and another takes its place, it says so and
// draws the new one from its first sample.
func TestRenderNoteAndSwitch(t *testing.T) {
	row := func(cookie uint64, port uint16, rate model.Bitrate) watch.Row {
		s := model.Socket{Cookie: cookie, Local: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port),
			Remote: netip.MustParseAddrPort("127.0.0.1:5201"), TCP: model.Sample{SndMSS: 1448}}
		return watch.Row{Socket: s, Sending: true, Rate: rate}
	}
	st := &State{Note: `2 connections match "dport 5201"; following the busiest`}
	for i := range 3 {
		st.Add(watch.Frame{At: time.Duration(i) * time.Second, Rows: []watch.Row{row(1, 40000, model.Bitrate(i+1)*model.MbitPerSecond)}})
	}
	if out := Render(st, 100, 30); !strings.Contains(out, "following the busiest") {
		t.Errorf("the note is missing:\n%s", out)
	}
	st.Add(watch.Frame{At: 3 * time.Second, Rows: []watch.Row{row(2, 40002, 0)}, Closed: []watch.Row{row(1, 40000, 0)}})
	out := Render(st, 100, 30)
	if len(st.Frames) != 1 || st.Closed ||
		!strings.Contains(out, "127.0.0.1:40000 → 127.0.0.1:5201 closed; following 127.0.0.1:40002 → 127.0.0.1:5201") ||
		!strings.Contains(out, "tcpscope watch  127.0.0.1:40002 → 127.0.0.1:5201") {
		t.Errorf("after the switch, %d frames:\n%s", len(st.Frames), out)
	}
}

func listRow(cookie uint64, port uint16, rate model.Bitrate) watch.ListRow {
	return watch.ListRow{SocketBrief: model.SocketBrief{Cookie: cookie,
		Local: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), Remote: netip.MustParseAddrPort("127.0.0.1:5201"),
		TCP: model.SampleBrief{State: model.TCPEstablished, SndMSS: 1448, SndCwnd: 10,
			BytesAcked: model.Some[model.Bytes](1 << 20), BytesReceived: model.Some[model.Bytes](0)}}, Rate: rate, Sending: true}
}

// A rate measured as nothing is 0; one not measured yet, on a
// connection's first sample, is absent, and so are its retransmissions.
func TestPickerFirstSampleAbsent(t *testing.T) {
	p := &Picker{All: true}
	first := listRow(2, 40002, 0)
	first.New = true
	p.Set(watch.List{At: time.Second, Rows: []watch.ListRow{listRow(1, 40001, 0), first}})
	out := RenderPicker(p, 120, 10)
	var zero, absent string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, ":40001"):
			zero = l
		case strings.Contains(l, ":40002"):
			absent = l
		}
	}
	if !strings.Contains(zero, " 0 bit/s →") || strings.Contains(absent, "bit/s") || !strings.Contains(absent, " - ") {
		t.Errorf("measured zero %q, first sample %q", zero, absent)
	}
}

// The choice stays with its connection while the list is re-sorted, and
// stays in view on a short screen; idle rows are hidden and counted.
func TestPicker(t *testing.T) {
	p := &Picker{Span: time.Second}
	if !strings.Contains(RenderPicker(p, 80, 24), "reading") {
		t.Error("no list yet, no word of it")
	}
	var rows []watch.ListRow
	for i := range 30 {
		rows = append(rows, listRow(uint64(100+i), uint16(40000+i), model.Bitrate(30-i)*model.MbitPerSecond))
	}
	idle := listRow(999, 39999, 0)
	idle.TCP.LastDataSent, idle.TCP.LastDataRecv = model.Some(time.Minute), model.Some(time.Minute)
	idle.TCP.RecvQ, idle.TCP.SendQ = model.Some[model.Bytes](0), model.Some[model.Bytes](0)
	p.Set(watch.List{At: time.Second, Rows: append(rows, idle)})
	if r, ok := p.Chosen(); !ok || r.Cookie != 100 {
		t.Fatalf("first choice %v", r.Cookie)
	}
	if out := RenderPicker(p, 100, 40); strings.Contains(out, ":39999") || !strings.Contains(out, "1 idle hidden") {
		t.Errorf("the idle row is shown, or its hiding not said:\n%s", out)
	}
	p.Move(2)
	if r, _ := p.Chosen(); r.Cookie != 102 {
		t.Fatalf("after two down: %d", r.Cookie)
	}
	// Re-sorted: 102 is now last; the choice goes with it.
	re := append([]watch.ListRow{}, rows[:2]...)
	re = append(re, rows[3:]...)
	re = append(re, rows[2])
	p.Set(watch.List{At: 2 * time.Second, Rows: re})
	if r, _ := p.Chosen(); r.Cookie != 102 {
		t.Fatalf("after the re-sort the choice is %d, want 102", r.Cookie)
	}
	out := RenderPicker(p, 100, 10)
	if lines := strings.Count(out, "\n"); lines > 10 {
		t.Errorf("%d lines on a 10-line screen:\n%s", lines, out)
	}
	chosen := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "▸") {
			chosen = l
		}
	}
	if !strings.Contains(chosen, "127.0.0.1:40002") || !strings.Contains(out, "30 connections") {
		t.Errorf("the chosen row is not in view, or not marked:\n%s", out)
	}
	p.Move(-100)
	if r, _ := p.Chosen(); r.Cookie != 100 {
		t.Errorf("up past the top: %d", r.Cookie)
	}
	// The chosen one gone: the same place.
	p.Move(5)
	p.Set(watch.List{At: 3 * time.Second, Rows: append(append([]watch.ListRow{}, re[:5]...), re[6:]...)})
	if r, _ := p.Chosen(); r.Cookie != re[6].Cookie {
		t.Errorf("after the chosen one went: %d, want %d", r.Cookie, re[6].Cookie)
	}
	all := &Picker{All: true, Span: time.Second}
	all.Set(watch.List{Rows: []watch.ListRow{idle}})
	if !strings.Contains(RenderPicker(all, 100, 40), ":39999") {
		t.Error("-a hides an idle row")
	}
}

// Every variable of model.Sample is in the pane, with its unit, and
// absent ones say so.
func TestVariables(t *testing.T) {
	s := model.Sample{KernelLen: 232, State: model.TCPEstablished, SndCwnd: 10, SndMSS: 1448, RTT: 20 * time.Millisecond,
		BytesAcked: model.Some[model.Bytes](3 << 20), DeliveryRate: model.Some(12 * model.MbitPerSecond), Congestion: "cubic"}
	vars := Variables(&s)
	fields := 0
	for i := range reflect.TypeOf(s).NumField() {
		if tag := reflect.TypeOf(s).Field(i).Tag.Get("json"); tag != "" && tag != "-" {
			fields++
		}
	}
	// Every field but at_ns and bbr, then BBR's four.
	if len(vars) != fields-2+4 {
		t.Errorf("%d variables for %d fields", len(vars), fields)
	}
	got := map[string]Var{}
	for _, v := range vars {
		got[v.Name] = v
	}
	for name, want := range map[string]string{
		"snd_cwnd": "10 segments", "snd_mss": "1448 B (1.41 KiB)", "rtt": "20ms", "bytes_acked": "3145728 B (3.00 MiB)",
		"delivery_rate": "12.0 Mbit/s", "state": "established", "congestion": "cubic", "kernel_len": "232 B",
		"ssthresh_infinite": "no", "min_rtt": "absent", "bbr.bw": "absent", "total_rto": "absent",
	} {
		if got[name].Value != want || got[name].Absent != (want == "absent") {
			t.Errorf("%s = %+v, want %q", name, got[name], want)
		}
	}
	s.BBR = &model.BBRInfo{BW: 50 * model.MbitPerSecond, MinRTT: 10 * time.Millisecond, PacingGain: 1.25, CwndGain: 2}
	for _, v := range Variables(&s) {
		if v.Name == "bbr.pacing_gain" && v.Value != "1.25" || v.Name == "bbr.bw" && v.Value != "50.0 Mbit/s" {
			t.Errorf("%+v", v)
		}
	}
	st := &State{Vars: true}
	st.Add(watch.Frame{Rows: []watch.Row{{Socket: model.Socket{TCP: s}}}})
	out := Render(st, 120, 60)
	for _, want := range []string{"snd_cwnd", "10 segments", "min_rtt", "absent", "v: charts"} {
		if !strings.Contains(out, want) {
			t.Errorf("the pane lacks %q:\n%s", want, out)
		}
	}
	if small := Render(st, 80, 12); strings.Count(small, "\n") > 12 || !strings.Contains(small, "(j/k)") {
		t.Errorf("on a small screen:\n%s", small)
	}
}

// The keys: arrows and j/k choose, Enter follows the chosen connection,
// Esc goes back to the list, and a sample asked for before a switch is
// dropped when it comes.
func TestKeys(t *testing.T) {
	var followed []uint64
	lists := 0
	m := newModel(Sources{
		List: func() (watch.List, error) { lists++; return watch.List{}, nil },
		Follow: func(r watch.ListRow) Source {
			followed = append(followed, r.Cookie)
			return func() (watch.Frame, error) { return watch.Frame{}, nil }
		},
	}, Options{Interval: time.Millisecond, Refresh: time.Second})
	m.width, m.height = 100, 30
	stale := m.list(0) // asked for before the switch below, run after it
	m.Update(listMsg{gen: 0, l: watch.List{Rows: []watch.ListRow{listRow(1, 40001, 3), listRow(2, 40002, 2), listRow(3, 40003, 1)}}})
	m.key("down")
	m.key("j")
	m.key("k")
	if m.key("enter") == nil || !m.following || len(followed) != 1 || followed[0] != 2 || !m.st.Back {
		t.Fatalf("enter: following %v, followed %v", m.following, followed)
	}
	// A list asked for before Enter is not read, and one read comes
	// late: dropped.
	if msg := stale(); msg != nil || lists != 0 {
		t.Errorf("a list asked for before the switch was read: %v, %d reads", msg, lists)
	}
	m.Update(listMsg{gen: 0, l: watch.List{}})
	if r, _ := m.pick.Chosen(); r.Cookie != 2 {
		t.Error("a stale list replaced the picker's")
	}
	m.key("v")
	if !m.st.Vars {
		t.Error("v shows no variables")
	}
	if m.key("esc") == nil || m.following {
		t.Fatal("esc did not go back to the list")
	}
	// A frame of the connection left behind comes late: dropped.
	m.Update(frameMsg{gen: m.gen - 1, f: watch.Frame{Rows: []watch.Row{{}}}})
	if len(m.st.Frames) != 0 {
		t.Error("a stale frame was drawn")
	}
	if _, ok := m.key("q")().(tea.QuitMsg); !ok {
		t.Error("q does not quit")
	}
	// --conn without a list: Esc quits.
	c := newModel(Sources{Frames: func() (watch.Frame, error) { return watch.Frame{}, nil }}, Options{})
	if _, ok := c.key("esc")().(tea.QuitMsg); !ok {
		t.Error("esc without a list does not quit")
	}
}

// ansi matches the styles' escape sequences.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// At 80 columns no line of either view is wider than the screen.
func TestEightyColumns(t *testing.T) {
	s := model.Socket{Local: netip.MustParseAddrPort("10.199.249.1:42290"), Remote: netip.MustParseAddrPort("10.200.249.1:5202"),
		PID: 21048, Process: "iperf3", TCP: model.Sample{State: model.TCPEstablished, Congestion: "bbr", SndCwnd: 44, SndMSS: 1448,
			BBR: &model.BBRInfo{PacingGain: 1.25, CwndGain: 2}, RTT: 20 * time.Millisecond, MinRTT: model.Some(20 * time.Millisecond),
			Options: model.Options{SACK: true, Timestamps: true, WindowScaling: true, SndWScale: 10, RcvWScale: 10}}}
	st := &State{Back: true, Note: `2 connections match "dport 5202"; following the busiest, 10.199.249.1:42290 → 10.200.249.1:5202 (12.4 Mbit/s sent); also 10.199.249.1:42288 → 10.200.249.1:5202 (idle)`}
	for i := range 30 {
		st.Add(watch.Frame{At: time.Duration(i) * time.Second, Rows: []watch.Row{{Socket: s, Sending: true, Rate: 12.4e6,
			Limited: model.Some(model.Limited{Rwnd: 0.96, Sndbuf: 0.02, Cwnd: 0.02})}},
			Diagnosis: []model.Finding{{ID: "wscale-off", Severity: model.Critical, Confidence: model.High,
				Summary: "Window scaling is off, so the receiver can offer at most 64 KiB: 26.1 Mbit/s at this RTT."}}})
	}
	p := &Picker{Span: time.Second}
	p.Set(watch.List{At: time.Second, Rows: []watch.ListRow{{SocketBrief: s.Brief(), Rate: 12.4e6, Sending: true}}})
	for name, out := range map[string]string{"follow": Render(st, 80, 40), "picker": RenderPicker(p, 80, 24)} {
		for _, l := range strings.Split(out, "\n") {
			if n := len([]rune(ansi.ReplaceAllString(l, ""))); n > 80 {
				t.Errorf("%s: a line of %d columns: %q", name, n, l)
			}
		}
		if name == "picker" && !strings.Contains(out, "iperf3/21048") {
			t.Errorf("the picker cuts the process at 80 columns:\n%s", out)
		}
	}
}
