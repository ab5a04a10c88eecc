package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	goldenfile "github.com/tcpscope/tcpscope/internal/golden"

	"github.com/tcpscope/tcpscope/internal/model"
)

// load reads a run recorded with `tcpscope test --json`.
func load(t *testing.T, name string) *model.Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var r model.Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

// replay feeds a recorded run through a presenter as a live run would,
// with the server's intervals arriving a little after the client's.
func replay(run *model.Run, begin func(*model.Run), interval func(model.Side, *model.Interval)) {
	begin(run)
	n := max(len(run.Client.Intervals), len(run.Remote.Intervals))
	for i := range n {
		if i < len(run.Client.Intervals) {
			interval(model.ClientSide, &run.Client.Intervals[i])
		}
		if i > 0 && i-1 < len(run.Remote.Intervals) {
			interval(model.ServerSide, &run.Remote.Intervals[i-1])
		}
	}
	if n > 0 && n-1 < len(run.Remote.Intervals) {
		interval(model.ServerSide, &run.Remote.Intervals[n-1])
	}
}

func TestTextGolden(t *testing.T) {
	for _, c := range []struct {
		run     string
		verbose bool
		format  model.RateFormat
		width   int // 0: the default, 80
	}{
		// Recorded by this version: every TCP interval has the
		// sender's acknowledged bytes.
		{"tcp.json", false, model.RateAuto, 0},
		{"tcp.json", true, model.RateAuto, 0},
		{"reverse.json", false, model.RateAuto, 0},
		{"p4.json", false, model.RateAuto, 0},
		{"p4.json", true, model.RateAuto, 0},
		{"bidir2.json", false, model.RateAuto, 0},
		{"udp.json", false, model.RateAuto, 0},
		{"udp.json", true, model.RateAuto, 0},
		{"paced.json", false, model.RateAuto, 0},
		// Across the lab's vhp path (100 Mbit/s, 20 ms) from a
		// 2001-era host: 64 KiB buffers, 1 MiB writes.
		{"vhp.json", false, model.RateAuto, 0},
		{"vhp.json", false, model.RateAuto, 132}, // the writes beside
		// Recorded before intervals carried acknowledged bytes.
		{"bidir.json", false, model.RateAuto, 0},
		{"bidir.json", true, model.RateMbit, 0},
		{"reverse-omit.json", false, model.RateAutoBytes, 0},
		// Against stock iperf3 servers (tcpscope test --iperf3): the
		// server's side is its results alone.
		{"iperf3-p2.json", false, model.RateAuto, 0},
		{"iperf3-p2.json", true, model.RateAuto, 0},
		{"iperf3-reverse-p2.json", false, model.RateAuto, 0},
		{"iperf3-bidir.json", false, model.RateAuto, 0},
		{"iperf3-udp.json", false, model.RateAuto, 0},
		{"iperf3-acked-p2.json", false, model.RateAuto, 0},
	} {
		run := load(t, c.run)
		var out bytes.Buffer
		txt := NewText(&out, TextOptions{Format: c.format, Verbose: c.verbose, Width: c.width})
		replay(run, txt.Begin, txt.Interval)
		if err := txt.End(run); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(c.run, ".json")
		if c.verbose {
			name += "-verbose"
		}
		if c.width != 0 {
			name += fmt.Sprintf("-w%d", c.width)
		}
		golden(t, name+"-"+string(c.format)+".txt", out.Bytes())
		// Every interval of every stream was printed, once, with a
		// sum per direction when there are several streams.
		if got, want := tableRows(out.String()), wantRows(run); got != want {
			t.Errorf("%s: %d interval rows, want %d", name, got, want)
		}
	}
}

// tableRows counts the interval table's rows in a text output.
func tableRows(text string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if rowLine.MatchString(l) {
			n++
		}
	}
	return n
}

var rowLine = regexp.MustCompile(`^\[( *\d+|SUM|C→S|S→C)\] \d+\.\d\d-`)

// wantRows is the rows a run's intervals make: a row per stream either
// end reported, and a sum per direction of several streams.
func wantRows(run *model.Run) int {
	dir := map[int]model.Direction{}
	for _, s := range run.Streams {
		dir[s.ID] = s.Direction
	}
	n := 0
	for i := range max(len(run.Client.Intervals), len(run.Remote.Intervals)) {
		ids := map[int]bool{}
		for _, e := range []*model.EndReport{&run.Client, &run.Remote} {
			if i < len(e.Intervals) {
				for _, si := range e.Intervals[i].Streams {
					ids[si.Stream] = true
				}
			}
		}
		n += len(ids)
		per := map[model.Direction]int{}
		for id := range ids {
			per[dir[id]]++
		}
		for _, k := range per {
			if k > 1 {
				n++
			}
		}
	}
	return n
}

func TestTextFlushesOneSidedIntervals(t *testing.T) {
	run := load(t, "bidir.json")
	var out bytes.Buffer
	txt := NewText(&out, TextOptions{Format: model.RateAuto})
	txt.Begin(run)
	for i := range run.Client.Intervals {
		txt.Interval(model.ClientSide, &run.Client.Intervals[i])
	}
	if strings.Contains(out.String(), "0.00-0.20 s") {
		t.Fatal("printed an interval before the server's half arrived")
	}
	txt.End(run)
	if !strings.Contains(out.String(), "0.00-0.20 s") {
		t.Fatal("End did not flush the client's intervals")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	run := load(t, "bidir.json")
	var out bytes.Buffer
	if err := WriteJSON(&out, run); err != nil {
		t.Fatal(err)
	}
	var back model.Run
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	WriteJSON(&again, &back)
	if !bytes.Equal(out.Bytes(), again.Bytes()) {
		t.Fatal("JSON does not round-trip: a saved run must read back identically")
	}
	// Absent kernel fields stay absent: the 6.18 recording has them all,
	// so cut one and check it disappears rather than reading 0.
	back.Client.Intervals[0].Streams[0].TCP.RcvWnd = model.Opt[model.Bytes]{}
	b, _ := json.Marshal(back.Client.Intervals[0].Streams[0].TCP)
	if strings.Contains(string(b), `"rcv_wnd"`) {
		t.Fatal("absent field written")
	}
}

func TestStreamEvents(t *testing.T) {
	run := load(t, "reverse-omit.json")
	var out bytes.Buffer
	s := NewStream(&out)
	replay(run, s.Begin, s.Interval)
	if err := s.End(run); err != nil {
		t.Fatal(err)
	}
	if err := s.Fail("busy", "server busy (1 running, limit 1)", "later"); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line is not JSON: %v", err)
		}
		if e.Schema != model.SchemaVersion {
			t.Fatalf("schema %q", e.Schema)
		}
		kinds = append(kinds, e.Event)
		if e.Event == "begin" && (e.Run == nil || len(e.Run.Client.Intervals) != 0) {
			t.Fatal("begin must carry the setup without measurements")
		}
	}
	want := 2 + len(run.Client.Intervals) + len(run.Remote.Intervals) + 1
	if len(kinds) != want || kinds[0] != "begin" || kinds[len(kinds)-2] != "end" || kinds[len(kinds)-1] != "error" {
		t.Fatalf("events %v", kinds)
	}
}

func TestTextShowsRequestedWindow(t *testing.T) {
	run := load(t, "bidir.json")
	run.Config.Window = 256 * model.KiB
	var out bytes.Buffer
	txt := NewText(&out, TextOptions{Format: model.RateAuto})
	txt.Begin(run)
	if !strings.Contains(out.String(), "requested with -w: 256 KiB each") || !strings.Contains(out.String(), "512 KiB expected") {
		t.Fatalf("header lacks the request:\n%s", out.String())
	}
}

func TestPlot(t *testing.T) {
	c := &Chart{
		Title: "goodput against socket buffer at 21 ms", XLabel: "buffer (KiB)", YLabel: "Mbit/s", LogX: true,
		Series: []Series{
			{Name: "window/RTT", Model: true, Points: []Point{{X: 64, Y: 25}, {X: 256, Y: 100}, {X: 4096, Y: 1000}}},
			{Name: "measured", Points: []Point{{X: 64, Y: 24, Low: 23, High: 25}, {X: 256, Y: 95}, {X: 4096, Y: 940, Low: 930, High: 950}, {X: 0, Y: 1}}},
		},
	}
	var png, svg bytes.Buffer
	if err := WritePlot(&png, c, "png"); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png.Bytes(), []byte("\x89PNG\r\n\x1a\n")) || png.Len() < 5000 {
		t.Fatalf("not a PNG image (%d bytes)", png.Len())
	}
	if err := WritePlot(&svg, c, "svg"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "window/RTT", "measured", "buffer (KiB)"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if err := WritePlot(&svg, c, "gif"); err == nil {
		t.Error("gif accepted")
	}
}

func TestTable(t *testing.T) {
	var out bytes.Buffer
	err := WriteTable(&out, &Table{
		Title:   "tuning across vhp",
		Columns: []string{"hosts", "n", "mean Mbit/s", "95% CI"},
		Rows:    [][]string{{"mistuned-2001", "5", "11.8", "11.2–12.4"}, {"tuned", "5", "94.1", "93.9–94.3"}},
		Notes:   []string{"tuned/mistuned = 7.97×"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "tuning across vhp\n" +
		"hosts          n  mean Mbit/s     95% CI\n" +
		"mistuned-2001  5         11.8  11.2–12.4\n" +
		"tuned          5         94.1  93.9–94.3\n" +
		"tuned/mistuned = 7.97×\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestBarPlot(t *testing.T) {
	c := &Chart{Title: "tuning", YLabel: "Mbit/s", Categories: []string{"mistuned-2001", "tuned"},
		Series: []Series{
			{Name: "measured", Points: []Point{{Y: 11.9, Low: 11.7, High: 12.2}, {Y: 96.3, Low: 95.5, High: 97.2}}},
			{Name: "model", Model: true, Points: []Point{{Y: 15}, {Y: 95.6}}},
		}}
	var svg bytes.Buffer
	if err := WritePlot(&svg, c, "svg"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mistuned-2001", "tuned", "measured", "model"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("bar chart SVG lacks %q", want)
		}
	}
}

// A stock iperf3 server reports no intervals and no kernel state: the
// client's intervals print as they come, nothing the server did not
// measure is printed as a zero, and what it did report (retransmissions,
// its congestion control, its CPU) is shown.
func TestTextPeerWithoutKernel(t *testing.T) {
	for _, c := range []struct {
		run  string
		want []string
	}{
		{"iperf3-p2.json", []string{"server buffers: not measured", "CPU, % of one core over each end's test: client ", "server receiver"}},
		{"iperf3-reverse-p2.json", []string{"retransmit  ", "RTT         not measured", "cc bbr,\n              as the sender reported", "\n  server "}},
		{"iperf3-udp.json", []string{"late (out of order) not measured"}},
	} {
		run := load(t, c.run)
		var out bytes.Buffer
		txt := NewText(&out, TextOptions{Format: model.RateAuto, Verbose: true})
		txt.Begin(run)
		txt.Interval(model.ClientSide, &run.Client.Intervals[0])
		if !strings.Contains(out.String(), "0.00-0.50 s") {
			t.Errorf("%s: the client's first interval waits for a server that sends none", c.run)
		}
		for i := 1; i < len(run.Client.Intervals); i++ {
			txt.Interval(model.ClientSide, &run.Client.Intervals[i])
		}
		if err := txt.End(run); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: output lacks %q:\n%s", c.run, w, text)
			}
		}
		for _, line := range strings.Split(text, "\n") {
			// A zero rate or byte count stands for a sum of nothing
			// (the -V detail lines hold measured zeros, like retrans 0 B).
			zero := strings.Contains(line, " 0 bit/s") || strings.Contains(line, " 0 B ") || strings.HasSuffix(line, " 0 B")
			if zero && !strings.HasPrefix(line, "      ") {
				t.Errorf("%s: a zero for what was not measured: %q", c.run, line)
			}
		}
	}
}

// renderText replays a recorded run through a Text with options o.
func renderText(t *testing.T, run *model.Run, o TextOptions) string {
	t.Helper()
	var out bytes.Buffer
	txt := NewText(&out, o)
	replay(run, txt.Begin, txt.Interval)
	if err := txt.End(run); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// Every line of the text output fits the width, in runes (µ, → and ⇄
// are one column and several bytes), at the default 80 columns and
// wider, with -V too. Only a fix's command is never broken, as it is
// meant to be copied whole.
func TestTextFitsWidth(t *testing.T) {
	runs := []string{"tcp.json", "reverse.json", "p4.json", "bidir2.json", "udp.json", "paced.json",
		"bidir.json", "reverse-omit.json", "iperf3-p2.json", "iperf3-reverse-p2.json", "iperf3-bidir.json", "iperf3-udp.json", "iperf3-acked-p2.json", "vhp.json"}
	for _, name := range runs {
		run := load(t, name)
		for _, width := range []int{0, 100, 132, 200} {
			for _, verbose := range []bool{false, true} {
				text := renderText(t, run, TextOptions{Format: model.RateAuto, Verbose: verbose, Width: width})
				limit := max(width, MinWidth)
				for i, l := range strings.Split(text, "\n") {
					if n := utf8.RuneCountInString(l); n > limit && !strings.HasPrefix(strings.TrimLeft(l, " "), "fix, ") {
						t.Errorf("%s, width %d, -V %v: line %d is %d columns:\n%s", name, width, verbose, i+1, n, l)
					}
				}
			}
		}
	}
}

// A wider terminal adds columns, the writes first: at 80 the sender's
// rate is what its kernel saw acknowledged, and wider its write rate
// stands beside it.
func TestTextWiderAddsColumns(t *testing.T) {
	run := load(t, "tcp.json")
	head := func(text string) string {
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "[ ID]") {
				return l
			}
		}
		t.Fatalf("no table header:\n%s", text)
		return ""
	}
	narrow := head(renderText(t, run, TextOptions{Format: model.RateAuto}))
	for _, col := range []string{"Acked", "Received", "Retr", "Cwnd", "sRTT", "Limited"} {
		if !strings.Contains(narrow, col) {
			t.Errorf("80 columns: no %s column: %q", col, narrow)
		}
	}
	if strings.Contains(narrow, "Written") {
		t.Errorf("80 columns: the write rate has no room: %q", narrow)
	}
	wide := head(renderText(t, run, TextOptions{Format: model.RateAuto, Width: 200}))
	for _, col := range []string{"Written", "Rwnd", "minRTT", "Transfer", "OOO", "rcvRTT"} {
		if !strings.Contains(wide, col) {
			t.Errorf("200 columns: no %s column: %q", col, wide)
		}
	}
	var out bytes.Buffer
	txt := NewText(&out, TextOptions{Format: model.RateAuto, Width: 132})
	replay(run, txt.Begin, txt.Interval)
	if err := txt.End(run); err != nil {
		t.Fatal(err)
	}
	golden(t, "tcp-wide-a.txt", out.Bytes())
}

// An interval no kernel read covers shows no acknowledged rate: a dash,
// never 0 bit/s.
func TestTextAckedAbsentIsNotZero(t *testing.T) {
	run := load(t, "tcp.json")
	si := &run.Client.Intervals[1].Streams[0]
	si.AckedBytes, si.AckedRate = model.Opt[model.Bytes]{}, model.Opt[model.Bitrate]{}
	text := renderText(t, run, TextOptions{Format: model.RateAuto})
	span := fmtSpan(&run.Client.Intervals[1], run.Config.Interval)
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "[  1] "+span) {
			if f := strings.Fields(l); f[4] != "-" || strings.Contains(l, " 0 bit/s") {
				t.Fatalf("acked rate of an unread interval: %q", l)
			}
			return
		}
	}
	t.Fatalf("no row for the second interval:\n%s", text)
}

func TestWrap(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  []string
	}{
		{"short", 20, []string{"short"}},
		// At a space, continuation lines indented; µ is one column.
		{"rtt 146µs rto 204ms lost 0", 14, []string{"rtt 146µs rto", "  204ms lost 0"}},
		// After a comma that fills most of the line, not mid-phrase.
		{"alpha beta gamma, delta epsilon", 24, []string{"alpha beta gamma,", "  delta epsilon"}},
		// A comma early in the line is not worth a short line.
		{"a, bb cc dd ee ff gg hh", 12, []string{"a, bb cc dd", "  ee ff gg", "  hh"}},
		// A word wider than the line stays whole.
		{"fix: sysctl -w net.core.rmem_max=1073741824", 20, []string{"fix: sysctl -w", "  net.core.rmem_max=1073741824"}},
		// Spaces that align columns are not break points.
		{"x      12   34", 10, []string{"x", "  12   34"}},
	} {
		got := wrap(c.in, c.width, "  ")
		if !slices.Equal(got, c.want) {
			t.Errorf("wrap(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
		for _, l := range got {
			if utf8.RuneCountInString(l) > c.width && !strings.Contains(l, "rmem_max") {
				t.Errorf("wrap(%q, %d): %q too wide", c.in, c.width, l)
			}
		}
	}
}

// A span stays within its column however long the test: an hour's
// intervals print in whole seconds, a slow test's to the tenth.
func TestSpanWidth(t *testing.T) {
	for _, c := range []struct {
		start, end, every time.Duration
		want              string
	}{
		{0, time.Second, time.Second, "0.00-1.00 s"},
		{98 * time.Second, 99 * time.Second, time.Second, "98.00-99.00 s"},
		{99 * time.Second, 100 * time.Second, time.Second, "99.0-100.0 s"},
		{3600 * time.Second, 3601 * time.Second, time.Second, "3600-3601 s"},
		{3600 * time.Second, 3600*time.Second + 500*time.Millisecond, 500 * time.Millisecond, "3600.0-3600.5 s"},
		{86398 * time.Second, 86399 * time.Second, time.Second, "86398-86399 s"},
	} {
		got := fmtSpan(&model.Interval{Start: c.start, End: c.end}, c.every)
		if got != c.want {
			t.Errorf("span %v-%v every %v: %q, want %q", c.start, c.end, c.every, got, c.want)
		}
		if c.every%time.Second == 0 && utf8.RuneCountInString(got) > spanWidth(&model.TestConfig{}) {
			t.Errorf("%q wider than its column", got)
		}
	}
}
