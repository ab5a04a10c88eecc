package scope

import (
	"net/netip"
	"strings"
	"testing"
	"time"

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
