package iperf3

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// serverText is the server's account of an iperf3 test as text, for a
// client that asked for it (--get-server-output), laid out as stock
// iperf3's server prints it, so a user or a script reading "Server
// output:" finds what it knows: the connections, each interval per
// stream (and their sum), then the summary with each stream's role. The
// server's diagnosis follows, on lines of its own.
func (h *Handler) serverText(cfg *model.TestConfig, rep *model.EndReport, c net.Conn, streams []streamAddrs) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Accepted connection from %s\n", hostPort(c.RemoteAddr()))
	for _, s := range streams {
		if s.local == nil || s.remote == nil {
			continue
		}
		l, r := splitAddr(s.local), splitAddr(s.remote)
		fmt.Fprintf(&b, "[%3d] local %s port %s connected to %s port %s\n", streamID(s.id), l[0], l[1], r[0], r[1])
	}
	t := textReport{cfg: cfg, bidir: cfg.Bidir, udp: cfg.IsUDP()}
	t.header(&b, false)
	for i, iv := range rep.Intervals {
		if i > 0 && len(rep.Totals) > 1 {
			b.WriteString(separator)
		}
		span := iv.End - iv.Start
		for _, si := range iv.Streams {
			t.intervalLine(&b, iv, si, span)
		}
		t.sums(&b, iv.Start, iv.End, iv.Omitted, iv.Streams)
	}
	b.WriteString(separator)
	t.header(&b, true)
	for _, tot := range rep.Totals {
		t.totalLine(&b, tot)
	}
	t.totalSums(&b, rep.Totals)
	if h.Explain != nil {
		lines := h.Explain(*cfg, *rep, c.RemoteAddr().String(), c.LocalAddr().String())
		if len(lines) > 0 {
			b.WriteByte('\n')
		}
		for _, line := range lines {
			fmt.Fprintf(&b, "diagnosis: %s\n", line)
		}
	}
	return b.String()
}

// streamAddrs is a stream's number and its socket's two addresses.
type streamAddrs struct {
	id            int
	local, remote net.Addr
}

// separator is iperf3's line between interval groups and before the
// summary.
const separator = "- - - - - - - - - - - - - - - - - - - - - - - - -\n"

// textReport lays out the lines of one test's report.
type textReport struct {
	cfg   *model.TestConfig
	bidir bool
	udp   bool
}

// header is the column line: the sender's columns where the server
// sends (retransmissions, and the window in intervals), the receiver's
// where it receives (UDP: jitter and loss).
func (t textReport) header(b *strings.Builder, summary bool) {
	id := "[ ID]"
	if t.bidir {
		id = "[ ID][Role]"
	}
	cols := ""
	switch {
	case t.udp && t.cfg.Reverse && !t.bidir && !summary:
		cols = "         Total Datagrams"
	case t.udp:
		cols = "         Jitter    Lost/Total Datagrams"
	case t.cfg.Reverse || t.bidir:
		cols = "         Retr"
		if !summary {
			cols += "  Cwnd"
		}
	}
	fmt.Fprintf(b, "%s Interval           Transfer     Bitrate%s\n", id, cols)
}

// lead is a line's start: the stream (or SUM) with its role in --bidir,
// the interval, the bytes and the rate.
func (t textReport) lead(b *strings.Builder, id string, role model.Role, from, to time.Duration, bytes model.Bytes, rate model.Bitrate) {
	fmt.Fprintf(b, "[%s]", id)
	if t.bidir {
		tag := "RX-S"
		if role == model.Sender {
			tag = "TX-S"
		}
		fmt.Fprintf(b, "[%s]", tag)
	}
	fmt.Fprintf(b, " %6.2f-%-6.2f sec  %s  %s", from.Seconds(), to.Seconds(), model.Iperf3Bytes(bytes), model.Iperf3Rate(rate))
}

func omitted(o bool) string {
	if o {
		return "(omitted)"
	}
	return ""
}

// intervalLine is one stream's line of one interval.
func (t textReport) intervalLine(b *strings.Builder, iv model.Interval, si model.StreamInterval, span time.Duration) {
	t.lead(b, fmt.Sprintf("%3d", streamID(si.Stream)), si.Role, iv.Start, iv.End, si.Bytes, model.RateOf(si.Bytes, span.Seconds()))
	switch u := si.UDP; {
	case u != nil && si.Role == model.Receiver:
		fmt.Fprintf(b, "  %5.3f ms  %d/%d (%.2g%%)  %s\n", ms(u.Jitter), u.Lost, u.Packets, 100*u.LossRate(), omitted(iv.Omitted))
	case u != nil:
		fmt.Fprintf(b, "  %d  %s\n", u.Packets, omitted(iv.Omitted))
	case si.Role == model.Sender:
		fmt.Fprintf(b, "  %3d   %s       %s\n", si.RetransSegs, model.Iperf3Bytes(si.TCP.CwndBytes()), omitted(iv.Omitted))
	default:
		fmt.Fprintf(b, "                  %s\n", omitted(iv.Omitted))
	}
}

// sums are an interval's [SUM] lines, one per direction with more than
// one stream.
func (t textReport) sums(b *strings.Builder, from, to time.Duration, omit bool, ss []model.StreamInterval) {
	for _, role := range []model.Role{model.Sender, model.Receiver} {
		var n int
		var bytes model.Bytes
		var retr uint32
		var udp model.Datagrams
		for _, si := range ss {
			if si.Role != role {
				continue
			}
			n++
			bytes += si.Bytes
			retr += si.RetransSegs
			if si.UDP != nil {
				udp.Add(si.UDP)
			}
		}
		if n < 2 {
			continue
		}
		t.lead(b, "SUM", role, from, to, bytes, model.RateOf(bytes, (to-from).Seconds()))
		switch {
		case t.udp && role == model.Receiver:
			fmt.Fprintf(b, "  %5.3f ms  %d/%d (%.2g%%)  %s\n", ms(udp.Jitter), udp.Lost, udp.Packets, 100*udp.LossRate(), omitted(omit))
		case t.udp:
			fmt.Fprintf(b, "  %d  %s\n", udp.Packets, omitted(omit))
		case role == model.Sender:
			fmt.Fprintf(b, "  %3d             %s\n", retr, omitted(omit))
		default:
			fmt.Fprintf(b, "                  %s\n", omitted(omit))
		}
	}
}

// totalLine is one stream's summary line, its role last.
func (t textReport) totalLine(b *strings.Builder, tot model.StreamTotal) {
	role := "receiver"
	if tot.Role == model.Sender {
		role = "sender"
	}
	t.lead(b, fmt.Sprintf("%3d", streamID(tot.Stream)), tot.Role, 0, tot.Duration, tot.Bytes, tot.Rate)
	switch u := tot.UDP; {
	case u != nil && tot.Role == model.Receiver:
		fmt.Fprintf(b, "  %5.3f ms  %d/%d (%.2g%%)  %s\n", ms(u.Jitter), u.Lost, u.Packets, 100*u.LossRate(), role)
	case u != nil:
		// A sender knows no loss: iperf3 prints its datagrams as 0 lost.
		fmt.Fprintf(b, "  %5.3f ms  0/%d (0%%)  %s\n", 0.0, u.Packets, role)
	case tot.Role == model.Sender:
		retr := "  -"
		if n, ok := tot.RetransSegs.Get(); ok {
			retr = fmt.Sprintf("%3d", n)
		}
		fmt.Fprintf(b, "  %s             %s\n", retr, role)
	default:
		fmt.Fprintf(b, "                  %s\n", role)
	}
}

// totalSums are the summary's [SUM] lines, one per direction with more
// than one stream.
func (t textReport) totalSums(b *strings.Builder, totals []model.StreamTotal) {
	for _, role := range []model.Role{model.Sender, model.Receiver} {
		var n int
		var sum model.StreamTotal
		var udp model.Datagrams
		var retr uint32
		for _, tot := range totals {
			if tot.Role != role {
				continue
			}
			n++
			sum.Bytes += tot.Bytes
			sum.Duration = max(sum.Duration, tot.Duration)
			if r, ok := tot.RetransSegs.Get(); ok {
				retr += r
			}
			if tot.UDP != nil {
				udp.Add(tot.UDP)
			}
		}
		if n < 2 {
			continue
		}
		sum.Role, sum.Rate = role, model.RateOf(sum.Bytes, sum.Duration.Seconds())
		name := "receiver"
		if role == model.Sender {
			name = "sender"
		}
		t.lead(b, "SUM", role, 0, sum.Duration, sum.Bytes, sum.Rate)
		switch {
		case t.udp && role == model.Receiver:
			fmt.Fprintf(b, "  %5.3f ms  %d/%d (%.2g%%)  %s\n", ms(udp.Jitter), udp.Lost, udp.Packets, 100*udp.LossRate(), name)
		case t.udp:
			fmt.Fprintf(b, "  %5.3f ms  0/%d (0%%)  %s\n", 0.0, udp.Packets, name)
		case role == model.Sender:
			fmt.Fprintf(b, "  %3d             %s\n", retr, name)
		default:
			fmt.Fprintf(b, "                  %s\n", name)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// hostPort is "host, port N" as iperf3 names a peer.
func hostPort(a net.Addr) string {
	p := splitAddr(a)
	return p[0] + ", port " + p[1]
}

// splitAddr is an address's host and port ("?" where it has none).
func splitAddr(a net.Addr) [2]string {
	if a == nil {
		return [2]string{"?", "?"}
	}
	h, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return [2]string{a.String(), "?"}
	}
	return [2]string{h, p}
}
