package cli

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/watch"
)

// tabwriterList is the connection list as it was written before
// internal/columns: through text/tabwriter, cell by cell with fmt. The
// list must still come out byte for byte like this.
func tabwriterList(l watch.List) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "local\tremote\tstate\tcc\tgoodput\t\tRTT\tcwnd\tretr\tprocess\t")
	for _, r := range l.Rows {
		dir := "←"
		if r.Sending {
			dir = "→"
		}
		proc := ""
		if r.PID != 0 {
			proc = fmt.Sprintf("%s/%d", r.Process, r.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", r.Local, r.Remote, r.TCP.State, r.TCP.Congestion,
			r.Rate, dir, fmtRTT(r.TCP.RTT), r.TCP.CwndBytes().Binary(), r.Retrans, proc)
	}
	tw.Flush()
	for _, r := range l.Closed {
		fmt.Fprintf(&b, "closed: %s → %s\n", r.Local, r.Remote)
	}
	return b.String()
}

func TestListLikeTabwriter(t *testing.T) {
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
		v := &watchView{out: &out, refresh: time.Second, interval: time.Second, filter: "dport 22"}
		if err := v.list(l); err != nil {
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

// BenchmarkList lays out a list of 20,000 connections, as bench/watch.sh
// has them.
func BenchmarkList(b *testing.B) {
	l := watch.List{}
	for i := range 20000 {
		l.Rows = append(l.Rows, watch.ListRow{SocketBrief: model.SocketBrief{
			Local:  netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(32768+i)),
			Remote: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 37813),
			TCP:    model.SampleBrief{State: 1, Congestion: "cubic", RTT: time.Duration(20+i%50) * time.Microsecond, SndMSS: 32768, SndCwnd: 10},
		}})
	}
	v := &watchView{out: io.Discard, refresh: time.Second, interval: time.Second}
	for b.Loop() {
		v.frames = 0
		if err := v.list(l); err != nil {
			b.Fatal(err)
		}
	}
}
