package report

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/watch"
)

// tabwriterList is the connection list as it was written before
// internal/columns: through text/tabwriter, cell by cell with fmt. The
// list, where nothing needs to give way, must still come out byte for
// byte like this.
func tabwriterList(l watch.List) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "local\tremote\tstate\tcc\tgoodput\t\tRTT\tcwnd\tretr\tprocess\t")
	for _, r := range l.Rows {
		rate, dir, retr := r.Rate.String(), "←", fmt.Sprint(r.Retrans)
		if r.Sending {
			dir = "→"
		}
		if r.New || !r.TCP.BytesAcked.OK && !r.TCP.BytesReceived.OK {
			rate, dir, retr = "-", "", "-"
		}
		cwnd := "-"
		if r.TCP.LastDataSent.OK {
			cwnd = r.TCP.CwndBytes().Binary()
		}
		proc := ""
		if r.PID != 0 {
			proc = fmt.Sprintf("%s/%d", r.Process, r.PID)
		}
		state := r.TCP.State.String()
		if r.TCP.State == model.TCPEstablished {
			state = "estab"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Local, r.Remote, state, r.TCP.Congestion,
			rate, dir, watchRTT(r.TCP.RTT), cwnd, retr, proc)
	}
	tw.Flush()
	for _, r := range l.Closed {
		fmt.Fprintf(&b, "closed: %s → %s\n", r.Local, r.Remote)
	}
	return b.String()
}

func TestWatchListLikeTabwriter(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	addrs := []netip.AddrPort{
		netip.MustParseAddrPort("127.0.0.1:5201"), netip.MustParseAddrPort("10.11.12.13:65535"),
		netip.MustParseAddrPort("[2001:db8::1]:22"), netip.MustParseAddrPort("[fe80::1%eth0]:443"), {},
	}
	procs := []string{"iperf3", "", "naïve-日本", "tab\there", "a<b>&c", "new\nline"}
	ccs := []string{"cubic", "bbr", "", "reno"}
	rates := []model.Bitrate{0, 1, 999, 1500, 9.41e9, 123.456e6, 2.5e12}
	rtts := []time.Duration{0, 57 * time.Microsecond, 999 * time.Microsecond, 12345678, 2 * time.Second}
	row := func() watch.ListRow {
		lr := watch.ListRow{
			SocketBrief: model.SocketBrief{
				Local: addrs[r.IntN(len(addrs))], Remote: addrs[r.IntN(len(addrs))],
				TCP: model.SampleBrief{State: model.TCPState(r.IntN(16)), Congestion: ccs[r.IntN(len(ccs))],
					RTT: rtts[r.IntN(len(rtts))], SndMSS: model.Bytes(r.IntN(65536)), SndCwnd: uint32(r.IntN(100000))},
			},
			Sending: r.IntN(2) == 0, Rate: rates[r.IntN(len(rates))], Retrans: uint32(r.IntN(5000)),
		}
		if r.IntN(3) > 0 {
			lr.PID, lr.Process = 1+r.IntN(4000000), procs[r.IntN(len(procs))]
		}
		// Counters and tcp_info, or not; a first sample, or not.
		if r.IntN(4) > 0 {
			lr.TCP.BytesAcked = model.Some(model.Bytes(r.IntN(1 << 30)))
		}
		if r.IntN(4) > 0 {
			lr.TCP.BytesReceived = model.Some(model.Bytes(r.IntN(1 << 30)))
		}
		if r.IntN(4) > 0 {
			lr.TCP.LastDataSent = model.Some(time.Duration(r.IntN(1e9)))
		}
		lr.New = r.IntN(5) == 0
		return lr
	}
	for n := range 41 {
		l := watch.List{At: time.Duration(n) * time.Second}
		rows := r.IntN(30)
		if n == 40 { // formatted in two halves
			rows = 2500
		}
		for range rows {
			l.Rows = append(l.Rows, row())
		}
		for range r.IntN(3) {
			l.Closed = append(l.Closed, row())
		}
		var out bytes.Buffer
		v := &WatchList{Out: &out, Refresh: time.Second, Interval: time.Second, Filter: "dport 22", Width: 1 << 20}
		if err := v.Write(l); err != nil {
			t.Fatal(err)
		}
		header, got, _ := strings.Cut(out.String(), "\n")
		if !strings.HasPrefix(header, fmt.Sprintf("tcpscope watch: %d connections (dport 22) at ", len(l.Rows))) {
			t.Errorf("header %q", header)
		}
		if want := tabwriterList(l); got != want {
			t.Fatalf("list %d:\ngot\n%s\nwant\n%s", n, got, want)
		}
	}
}

// BenchmarkWatchList lays out a list of 20,000 connections, as bench/watch.sh
// has them.
func BenchmarkWatchList(b *testing.B) {
	l := watch.List{}
	for i := range 20000 {
		l.Rows = append(l.Rows, watch.ListRow{SocketBrief: model.SocketBrief{
			Local:  netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(32768+i)),
			Remote: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 37813),
			TCP:    model.SampleBrief{State: 1, Congestion: "cubic", RTT: time.Duration(20+i%50) * time.Microsecond, SndMSS: 32768, SndCwnd: 10},
		}})
	}
	v := &WatchList{Out: io.Discard, Refresh: time.Second, Interval: time.Second}
	for b.Loop() {
		v.frames = 0
		if err := v.Write(l); err != nil {
			b.Fatal(err)
		}
	}
}

// followFrames is a followed connection's life as tcpscope watch --conn
// shows it: its first sight, samples, a change of diagnosis, another
// match taking its place when it closes, and that one's end.
func followFrames() []watch.Frame {
	a := watch.Row{Socket: model.Socket{Cookie: 1, Local: netip.MustParseAddrPort("127.0.0.1:40002"),
		Remote: netip.MustParseAddrPort("127.0.0.1:5201"), PID: 4711, Process: "iperf3",
		TCP: model.Sample{KernelLen: 248, Congestion: "cubic", Options: model.Options{SACK: true, Timestamps: true}, SndMSS: 32741, SndCwnd: 10,
			RTT: 57 * time.Microsecond, MinRTT: model.Some(20 * time.Microsecond), SndWnd: model.Some(model.Bytes(3 << 20)),
			BytesAcked: model.Some[model.Bytes](1 << 20), BytesReceived: model.Some[model.Bytes](4096), Unacked: 8, SndSsthresh: 7,
			DeliveryRate: model.Some[model.Bitrate](81e6), NotsentBytes: model.Some[model.Bytes](0), RecvQ: model.Some[model.Bytes](0)}}}
	b := a
	b.Cookie, b.Local, b.PID, b.Process = 2, netip.MustParseAddrPort("127.0.0.1:40004"), 0, ""
	// Absent, not zero: a window the kernel did not give, a slow start
	// not over (ssthresh infinite).
	b.TCP.SndWnd, b.TCP.SsthreshInfinite, b.TCP.DeliveryRate = model.Opt[model.Bytes]{}, true, model.Opt[model.Bitrate]{}
	sent := func(r watch.Row, rate model.Bitrate) watch.Row {
		r.Sending, r.Rate, r.Retrans = true, rate, 3
		r.Limited = model.Some(model.Limited{Rwnd: 0.5, Cwnd: 0.25, App: 0.25})
		return r
	}
	got := func(r watch.Row, rate model.Bitrate) watch.Row {
		r.Rate, r.TCP.RecvQ = rate, model.Some(model.Bytes(1500))
		return r
	}
	rwnd := []model.Finding{{ID: "rwnd-limited", Summary: "The receiver's window holds the rate: it offers at most 3.00 MiB, " +
		"441 Mbit/s at this RTT, and the transfer got 80.0 Mbit/s; raising the receiver's buffer (tcp_rmem) lets it grow"}}
	app := []model.Finding{{ID: "app-limited", Summary: "the sender had nothing to send"}}
	newA, newB := a, b
	newA.New, newB.New = true, true
	return []watch.Frame{
		{At: 250 * time.Millisecond, Rows: []watch.Row{newA}},
		{At: 350 * time.Millisecond, Rows: []watch.Row{sent(a, 80e6)}},
		{At: 450 * time.Millisecond, Rows: []watch.Row{sent(a, 79.5e6)}, Diagnosis: rwnd},
		{At: 550 * time.Millisecond, Rows: []watch.Row{sent(a, 80e6)}, Diagnosis: rwnd},
		{At: 1250 * time.Millisecond, Rows: []watch.Row{sent(a, 1e6)}, Diagnosis: app},
		{At: 1600 * time.Millisecond, Rows: []watch.Row{newB}, Closed: []watch.Row{a}},
		{At: 1700 * time.Millisecond, Rows: []watch.Row{got(b, 12.5e6)}, Diagnosis: app},
		{At: 1800 * time.Millisecond, Closed: []watch.Row{b}},
	}
}

// The followed connection's lines, as tcpscope watch --conn prints them
// (and tcpscope replay reprints them): at 80 columns (also without a
// width) every line fits, in runes, with the essential columns; at 200
// every column; the diagnosis wrapped; what was not measured "-".
func TestWatchFollowText(t *testing.T) {
	follow := func(width int) string {
		var out bytes.Buffer
		v := &WatchFollow{Out: &out, Width: width}
		for _, f := range followFrames() {
			if err := v.Write(f); err != nil {
				t.Fatal(err)
			}
		}
		return out.String()
	}
	for _, c := range []struct {
		name  string
		width int
		heads []string
	}{
		{"watch-follow-80.txt", 80, []string{"time", "goodput", "cwnd", "peer wnd", "RTT", "retr", "unread", "limited"}},
		{"watch-follow-200.txt", 200, []string{"minRTT", "unacked", "ssthresh", "notsent", "delivery", "pacing", "rwnd%", "sndbuf%", "cwnd%", "app%"}},
	} {
		got := follow(c.width)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		long := 0
		for i, l := range lines {
			n := utf8.RuneCountInString(l)
			if n > c.width {
				t.Errorf("%s: line %d is %d runes wide, over %d: %q", c.name, i+1, n, c.width, l)
			}
			long = max(long, n)
		}
		if c.width == 200 && long <= 80 {
			t.Errorf("%s: no line wider than 80 at 200 columns", c.name)
		}
		header := ""
		for _, l := range lines {
			if strings.Contains(l, "goodput") {
				header = l
				break
			}
		}
		for _, h := range c.heads {
			if !strings.Contains(header, h) {
				t.Errorf("%s: no %s column: %q", c.name, h, header)
			}
		}
		for _, want := range []string{
			"  diagnosis: rwnd-limited: The receiver's window holds the rate",
			"80.0 Mbit/s →", "12.5 Mbit/s ←", "127.0.0.1:40002 → 127.0.0.1:5201 closed; its last sample:",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("%s lacks %q:\n%s", c.name, want, got)
			}
		}
		if strings.Contains(got, "0 bit/s") {
			t.Errorf("%s: a rate of 0 where none was measured:\n%s", c.name, got)
		}
		golden(t, c.name, []byte(got))
	}
	if got, want := follow(0), follow(80); got != want {
		t.Errorf("without a width:\n%s\nwant 80 columns:\n%s", got, want)
	}
}

// A note of watch's fits the width, a quoted filter and the option
// before it whole.
func TestWatchNote(t *testing.T) {
	note := `2 connections match "dport 5201"; following the busiest, [2001:db8:85a3:8d3:1319:8a2e:370:7348]:40002 → ` +
		`[2001:db8:85a3:8d3:1319:8a2e:370:7349]:5201 (80.0 Mbit/s sent); also 127.0.0.1:40000 → 127.0.0.1:5201 (idle). ` +
		`To follow another, narrow the filter, e.g. --conn "sport 40000 dport 5201"`
	for _, width := range []int{0, 80, 100, 200} {
		var out bytes.Buffer
		if err := WatchNote(&out, width, note); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		for i, l := range lines {
			if n := utf8.RuneCountInString(l); n > max(width, 80) {
				t.Errorf("width %d: line %d is %d runes: %q", width, i+1, n, l)
			}
			if i > 0 && !strings.HasPrefix(l, "  ") {
				t.Errorf("width %d: line %d not indented: %q", width, i+1, l)
			}
		}
		joined := strings.Join(lines, "\n")
		for _, whole := range []string{`"dport 5201"`, `--conn "sport 40000 dport 5201"`} {
			if !strings.Contains(joined, whole) {
				t.Errorf("width %d: %s broken:\n%s", width, whole, joined)
			}
		}
		if got := strings.ReplaceAll(joined, "\n  ", " "); got != "tcpscope watch: "+note {
			t.Errorf("width %d: the note unwrapped is\n%s", width, got)
		}
	}
}

// Idle connections are left out of the list and counted; busy ones, and
// those without tcp_info (nothing says they are idle), stay.
func TestWatchListHidesIdle(t *testing.T) {
	idle := func(port uint16, sent, recv time.Duration, sendQ model.Bytes) watch.ListRow {
		return watch.ListRow{SocketBrief: model.SocketBrief{
			Local: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), Remote: netip.MustParseAddrPort("127.0.0.1:22"),
			TCP: model.SampleBrief{State: model.TCPEstablished, LastDataSent: model.Some(sent), LastDataRecv: model.Some(recv),
				RecvQ: model.Some[model.Bytes](0), SendQ: model.Some(sendQ)}}}
	}
	l := watch.List{Rows: []watch.ListRow{
		idle(40001, 5*time.Second, 5*time.Second, 0),        // idle
		idle(40002, 200*time.Millisecond, 5*time.Second, 0), // sent within the refresh
		idle(40003, 5*time.Second, 5*time.Second, 1000),     // data queued
		{SocketBrief: model.SocketBrief{Local: netip.MustParseAddrPort("127.0.0.1:40004"), Remote: netip.MustParseAddrPort("127.0.0.1:22"),
			TCP: model.SampleBrief{State: model.TCPTimeWait}}}, // no tcp_info
		idle(40005, 9*time.Second, 9*time.Second, 0), // idle
	}}
	var out bytes.Buffer
	v := &WatchList{Out: &out, Refresh: time.Second, Interval: time.Second}
	if err := v.Write(l); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"3 connections", "2 idle connections hidden", ":40002", ":40003", ":40004"} {
		if !strings.Contains(got, want) {
			t.Errorf("list lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{":40001", ":40005"} {
		if strings.Contains(got, not) {
			t.Errorf("list shows the idle %s:\n%s", not, got)
		}
	}
	if len(l.Rows) != 5 || l.Rows[0].Local.Port() != 40001 {
		t.Error("hiding changed the session's rows")
	}
	out.Reset()
	v = &WatchList{Out: &out, Refresh: time.Second, Interval: time.Second, All: true}
	if err := v.Write(l); err != nil || !strings.Contains(out.String(), "5 connections") || strings.Contains(out.String(), "hidden") {
		t.Errorf("-a list:\n%s", out.String())
	}
}

// A filter too long for the header's line is cut, its start kept.
func TestWatchListLongFilter(t *testing.T) {
	var out bytes.Buffer
	filter := "( dport 22 or sport 22 or dport 443 or sport 443 ) and state established and not dst 10.0.0.0/8"
	v := &WatchList{Out: &out, Refresh: time.Second, Interval: time.Second, Filter: filter}
	if err := v.Write(goldenList(true)); err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(out.String(), "\n")
	if n := utf8.RuneCountInString(header); n > 80 || !strings.Contains(header, "(( dport 22 or sport 22") || !strings.Contains(header, "…) at ") {
		t.Errorf("header of %d runes: %q", n, header)
	}
}

// goldenList is a host's list with what makes one wide: long IPv6
// addresses, a long process name, a busy IPv4 LAN; and what is absent
// rather than zero: a connection's first sample, a time-wait socket
// without tcp_info.
func goldenList(loopbackOnly bool) watch.List {
	info := func(st model.TCPState, cc string, rtt time.Duration, cwnd uint32) model.SampleBrief {
		return model.SampleBrief{State: st, Congestion: cc, RTT: rtt, SndMSS: 1448, SndCwnd: cwnd,
			BytesAcked: model.Some[model.Bytes](1 << 20), BytesReceived: model.Some[model.Bytes](4096),
			LastDataSent: model.Some(10 * time.Millisecond), LastDataRecv: model.Some(10 * time.Millisecond),
			RecvQ: model.Some[model.Bytes](0), SendQ: model.Some[model.Bytes](0)}
	}
	row := func(local, remote string, tcp model.SampleBrief, sending bool, rate model.Bitrate, retr uint32, proc string, pid int) watch.ListRow {
		return watch.ListRow{SocketBrief: model.SocketBrief{Local: netip.MustParseAddrPort(local), Remote: netip.MustParseAddrPort(remote),
			TCP: tcp, Process: proc, PID: pid}, Sending: sending, Rate: rate, Retrans: retr}
	}
	l := watch.List{At: 3 * time.Second, Rows: []watch.ListRow{
		row("127.0.0.1:40002", "127.0.0.1:5201", info(model.TCPEstablished, "cubic", 57*time.Microsecond, 312), true, 27.3e9, 0, "iperf3", 21048),
		row("127.0.0.1:5201", "127.0.0.1:40002", info(model.TCPEstablished, "cubic", 31*time.Microsecond, 10), false, 27.3e9, 0, "tcpscope", 21050),
		row("127.0.0.1:40000", "127.0.0.1:5201", info(model.TCPEstablished, "cubic", 45*time.Microsecond, 10), false, 0, 0, "iperf3", 21048),
	}}
	// A connection seen for the first time: no rate yet.
	first := row("127.0.0.1:40004", "127.0.0.1:5201", info(model.TCPEstablished, "cubic", 40*time.Microsecond, 10), false, 0, 0, "iperf3", 21048)
	first.New = true
	l.Rows = append(l.Rows, first)
	if loopbackOnly {
		return l
	}
	l.Rows = append(l.Rows,
		row("[2a01:4f8:c17:1e2b:9a3c:51ff:fe23:8d4e]:443", "[2001:db8:85a3:8d3:1319:8a2e:370:7348]:51234",
			info(model.TCPEstablished, "bbr", 23410*time.Microsecond, 87), true, 48.7e6, 12, "nginx", 1187),
		row("192.168.178.104:53990", "142.250.185.110:443", info(model.TCPEstablished, "cubic", 12810*time.Microsecond, 40), false, 3.21e6, 0, "systemd-resolve", 4194304),
		row("[fe80::1c2d:3eff:fe4f:5a6b%wlp2s0]:22", "[fe80::9e5c:8eff:fe12:3456%wlp2s0]:51944", info(model.TCPCloseWait, "cubic", 2*time.Millisecond, 10), false, 1.2e3, 0, "sshd", 982),
		watch.ListRow{SocketBrief: model.SocketBrief{Local: netip.MustParseAddrPort("192.168.178.104:41234"), Remote: netip.MustParseAddrPort("151.101.1.69:443"),
			TCP: model.SampleBrief{State: model.TCPTimeWait}}},
	)
	l.Closed = []watch.ListRow{row("[2a01:4f8:c17:1e2b:9a3c:51ff:fe23:8d4e]:443", "[2001:db8:85a3:8d3:1319:8a2e:370:7348]:51000",
		info(model.TCPClose, "bbr", 0, 10), false, 0, 0, "nginx", 1187)}
	return l
}

// At 80 columns every line fits (in runes: the arrows and "…" are one
// byte each on no terminal); wider, every column comes back. A rate
// not yet measured is "-", a measured idle one "0 bit/s".
func TestWatchListWidths(t *testing.T) {
	clock := regexp.MustCompile(`at \d\d:\d\d:\d\d\n`)
	for _, c := range []struct {
		name         string
		loopbackOnly bool
		width        int
	}{
		{"watch-list-80.txt", false, 80},
		{"watch-list-wide.txt", false, 200},
		{"watch-list-loopback-80.txt", true, 80},
	} {
		var out bytes.Buffer
		v := &WatchList{Out: &out, Refresh: time.Second, Interval: time.Second, All: true, Width: c.width}
		if err := v.Write(goldenList(c.loopbackOnly)); err != nil {
			t.Fatal(err)
		}
		got := clock.ReplaceAll(out.Bytes(), []byte("at 15:04:05\n"))
		width := c.width
		for i, line := range strings.Split(strings.TrimSuffix(string(got), "\n"), "\n") {
			if n := utf8.RuneCountInString(line); n > width {
				t.Errorf("%s: line %d is %d runes wide, over %d: %q", c.name, i+1, n, width, line)
			}
		}
		header := strings.Split(string(got), "\n")[1]
		if !strings.Contains(header, "goodput") {
			t.Errorf("%s: header %q", c.name, header)
		}
		if c.width > 80 {
			for _, h := range []string{"local", "remote", "state", "cc", "goodput", "RTT", "cwnd", "retr", "process"} {
				if !slices.Contains(strings.Fields(header), h) {
					t.Errorf("%s: no %s column at %d wide: %q", c.name, h, c.width, header)
				}
			}
		}
		for _, want := range []string{" 0 bit/s ", ":40004", "iperf3/21048"} {
			if !strings.Contains(string(got), want) {
				t.Errorf("%s lacks %q", c.name, want)
			}
		}
		if strings.Contains(string(got), ":40004") && !regexp.MustCompile(`:40004 .* - `).Match(got) {
			t.Errorf("%s: the first sample's rate is not absent:\n%s", c.name, got)
		}
		golden(t, c.name, got)
		if c.width == 80 {
			// Without a width, 80.
			out.Reset()
			v := &WatchList{Out: &out, Refresh: time.Second, Interval: time.Second, All: true}
			if err := v.Write(goldenList(c.loopbackOnly)); err != nil {
				t.Fatal(err)
			}
			if def := clock.ReplaceAll(out.Bytes(), []byte("at 15:04:05\n")); !bytes.Equal(def, got) {
				t.Errorf("%s: without a width:\n%s", c.name, def)
			}
		}
	}
}
