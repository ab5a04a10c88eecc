package lab_test

import (
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
)

// emulated is a pair through the emulator itself, whatever the kernel
// has: these tests check the emulator.
func emulated(cfg emulator.Config) lab.PairConfig {
	return lab.PairConfig{Emulated: &cfg, Backend: lab.UseEmulator}
}

// tunFDs counts this process's open TUN device descriptors.
func tunFDs(t *testing.T) int {
	t.Helper()
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == "/dev/net/tun" {
			n++
		}
	}
	return n
}

// TestEmulatedPair checks the emulated topology: two namespaces, each with
// loopback and one TUN device routed to the other's subnet, traffic that
// crosses the emulator, and nothing left after Close.
func TestEmulatedPair(t *testing.T) {
	labtest.Require(t)
	fdsBefore, goroutinesBefore := tunFDs(t), runtime.NumGoroutine()
	p, err := lab.NewPair(t.Context(), emulated(emulator.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.R != nil || p.Emulator() == nil {
		t.Fatalf("R %v, emulator %v: want no router and an emulator", p.R, p.Emulator())
	}
	for _, tc := range []struct {
		h     *lab.Host
		other netip.Prefix
	}{{p.A, p.B.Prefix}, {p.B, p.A.Prefix}} {
		links := output(t, tc.h, "ip", "-o", "link", "show")
		if strings.Count(links, "\n") != 2 || !strings.Contains(links, " lo:") || !strings.Contains(links, " "+tc.h.Link+":") {
			t.Errorf("%s has links:\n%s", tc.h.Name, links)
		}
		routes := output(t, tc.h, "ip", "-4", "route", "show")
		if !strings.Contains(routes, tc.other.String()+" dev "+tc.h.Link) {
			t.Errorf("%s has routes:\n%s", tc.h.Name, routes)
		}
		if info := output(t, tc.h, "ip", "-d", "link", "show", "dev", tc.h.Link); !strings.Contains(info, "mtu 1500 ") || !strings.Contains(info, "tun") {
			t.Errorf("%s %s:\n%s", tc.h.Name, tc.h.Link, info)
		}
	}
	if in, out := p.RouterLinks(lab.AtoB); in != "" || out != "" {
		t.Errorf("RouterLinks = %q, %q", in, out)
	}
	if err := p.SetImpairment(t.Context(), lab.AtoB, lab.Impairment{Rate: model.MbitPerSecond}); err == nil {
		t.Error("SetImpairment on an emulated pair succeeded")
	}
	if _, err := p.A.Dial(t.Context(), "tcp", "192.0.2.1:9"); err == nil {
		t.Error("reached an address outside the pair")
	}

	n, _, _ := transfer(t, p.A, p.B, 200*time.Millisecond)
	ab, ba := p.Emulator().Counters(emulator.AtoB), p.Emulator().Counters(emulator.BtoA)
	t.Logf("%s moved; A→B %+v", model.Bytes(n), ab)
	if ab.ForwardedBytes < uint64(n) || ba.Forwarded == 0 {
		t.Errorf("the emulator forwarded %d bytes A→B and %d packets B→A for %d bytes of payload", ab.ForwardedBytes, ba.Forwarded, n)
	}
	if ab.Errors != 0 || ba.Errors != 0 {
		t.Errorf("device errors: %d A→B, %d B→A", ab.Errors, ba.Errors)
	}

	names := []string{p.A.Name, p.B.Name}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if left := netnsListed(t, names...); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
	if got := tunFDs(t); got != fdsBefore {
		t.Errorf("%d TUN descriptors open after Close, %d before", got, fdsBefore)
	}
	// The TUN devices' own goroutines (link event listeners) end
	// shortly after Close; the emulator's have ended when it returns.
	if !eventually(func() bool { return runtime.NumGoroutine() <= goroutinesBefore }) {
		t.Errorf("%d goroutines after Close, %d before", runtime.NumGoroutine(), goroutinesBefore)
	}
	if links, err := exec.Command("ip", "-o", "link", "show").Output(); err != nil || strings.Contains(string(links), "tun-") {
		t.Errorf("the host's namespace has links:\n%s%v", links, err)
	}
}

// TestEmulatedValidate checks that router impairments and an emulator
// exclude each other, and that a bad emulator configuration is refused
// before anything is built.
func TestEmulatedValidate(t *testing.T) {
	labtest.Require(t)
	for _, cfg := range []lab.PairConfig{
		{Emulated: &emulator.Config{}, AtoB: lab.Impairment{Rate: model.MbitPerSecond}},
		{Emulated: &emulator.Config{BtoA: emulator.Impairment{Loss: 2}}},
	} {
		if _, err := lab.NewPair(t.Context(), cfg); err == nil {
			t.Errorf("NewPair(%+v) succeeded", cfg)
		}
	}
	if left := ownNamespaces(t); len(left) != 0 {
		t.Errorf("a refused NewPair left %v", left)
	}
}

// connectTimes measures n TCP connects from A to B (the handshake's round
// trip), inside A so that no namespace switch is timed.
func connectTimes(t *testing.T, p *lab.Pair, n int) []time.Duration {
	t.Helper()
	ln := listen(t, p.B)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var times []time.Duration
	err := p.A.Do(func() error {
		var d net.Dialer
		for range n {
			start := time.Now()
			c, err := d.DialContext(t.Context(), "tcp", ln.Addr().String())
			took := time.Since(start)
			if err != nil {
				return err
			}
			c.Close()
			times = append(times, took)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(times)
	return times
}

// TestEmulatedDelay checks the RTT: 10 ms each way makes a TCP connect take
// 20 ms, within 0.3 ms + 1%. The median of 21 connects is taken; when the
// machine is busy (go test runs other packages' binaries beside this one,
// on two CPUs here) wake-ups come late and a round may miss, so up to three
// rounds are measured and the best median counts.
func TestEmulatedDelay(t *testing.T) {
	const oneWay = 10 * time.Millisecond
	p := labtest.Pair(t, emulated(emulator.Config{
		AtoB: emulator.Impairment{Delay: oneWay},
		BtoA: emulator.Impairment{Delay: oneWay},
	}))
	want := 2 * oneWay
	tol := 300*time.Microsecond + want/100
	best := time.Duration(math.MaxInt64)
	for round := range 5 {
		times := connectTimes(t, p, 21)
		med := times[len(times)/2]
		t.Logf("round %d: connect min %v, median %v, max %v (want %v ± %v)", round+1, times[0], med, times[len(times)-1], want, tol)
		if times[0] < want {
			t.Fatalf("a connect took %v, less than the round trip of %v", times[0], want)
		}
		best = min(best, med)
		if (med - want).Abs() <= tol {
			break
		}
	}
	if (best - want).Abs() > tol {
		t.Errorf("best median connect time %v, want %v ± %v", best, want, tol)
	}
}

// TestEmulatedRate checks the bottleneck: a TCP transfer over 100 Mbit/s
// (counting IP packets) carries 1448/1500 of it as payload.
func TestEmulatedRate(t *testing.T) {
	const rate = 100 * model.MbitPerSecond
	p := labtest.Pair(t, emulated(emulator.Config{
		AtoB: emulator.Impairment{Rate: rate, Delay: time.Millisecond},
		BtoA: emulator.Impairment{Delay: time.Millisecond},
	}))
	n, elapsed, info := transfer(t, p.A, p.B, 3*time.Second)
	got := model.RateOf(model.Bytes(n), elapsed.Seconds())
	// MSS 1448 (1500 less 20 IP, 20 TCP and 12 timestamp bytes) when
	// timestamps are on; 1460 without.
	mss := 1460
	if info.Options&1 != 0 { // TCPI_OPT_TIMESTAMPS
		mss = 1448
	}
	want := rate * model.Bitrate(mss) / 1500
	c := p.Emulator().Counters(emulator.AtoB)
	t.Logf("%s in %v: %v (%.4f of the payload share %v); %d retransmitted; queue drops %d, still queued %d",
		model.Bytes(n), elapsed.Round(time.Millisecond), got, float64(got/want), want, info.Total_retrans, c.DroppedQueue, c.Queued)
	if r := float64(got / want); r < 0.93 || r > 1.01 {
		t.Errorf("goodput %v, want within [0.93, 1.01] × %v", got, want)
	}
}

// TestEmulatedLoss sends UDP datagrams through 1% random loss: the share
// the emulator drops is within its 99% binomial interval, and what it
// forwards arrives.
func TestEmulatedLoss(t *testing.T) {
	const loss = 0.01
	// A fixed seed makes the count repeatable, so the 99% interval does
	// not fail one run in a hundred.
	p := labtest.Pair(t, emulated(emulator.Config{AtoB: emulator.Impairment{Loss: loss}, Seed: 1}))
	var rc net.PacketConn
	if err := p.B.Do(func() (err error) {
		rc, err = net.ListenPacket("udp", netip.AddrPortFrom(p.B.Addr, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.(*net.UDPConn).SetReadBuffer(4 << 20)
	got := make(chan int, 1)
	go func() {
		buf := make([]byte, 2048)
		k := 0
		for {
			rc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			if _, _, err := rc.ReadFrom(buf); err != nil {
				got <- k
				return
			}
			k++
		}
	}()
	sc, err := p.A.Dial(t.Context(), "udp", rc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	const n = 30_000
	msg := make([]byte, 100)
	for i := range n {
		if _, err := sc.Write(msg); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			// Stay within A's TUN queue (500 packets): no more than 200
			// of ours wait in it, since the emulator has read all but
			// the last 100 before the next 100 go. (Received may count
			// a stray packet of the host's too, which only lets the
			// next batch go sooner, still well within the queue.)
			waitUntil(t, "the emulator reads A's packets", func() bool {
				return p.Emulator().Counters(emulator.AtoB).Received >= uint64(i+1-100)
			})
		}
	}
	received := <-got
	c := p.Emulator().Counters(emulator.AtoB)
	// Received may count a few packets other than ours (IPv6 router
	// solicitations from the TUN devices, say), and miss some of ours if
	// A's TUN queue overflowed: the ratio is over what the emulator saw.
	total, dropped := int(c.Received), int(c.DroppedLoss)
	half := 2.5758 * math.Sqrt(loss*(1-loss)/float64(total))
	ratio := float64(dropped) / float64(total)
	t.Logf("%d packets, %d dropped (%.5f, 99%% interval %.5f–%.5f); %d datagrams arrived",
		total, dropped, ratio, loss-half, loss+half, received)
	if total < 20_000 {
		t.Fatalf("the emulator saw %d packets of the %d sent", total, n)
	}
	if ratio < loss-half || ratio > loss+half {
		t.Errorf("dropped %.5f, want within %.5f ± %.5f", ratio, loss, half)
	}
	if fwd := int(c.Forwarded); received > fwd || fwd != total-dropped {
		t.Errorf("%d datagrams arrived, %d forwarded, %d received by the emulator, %d dropped", received, fwd, total, dropped)
	}
}

// transferFor runs a one-way transfer of size bytes from A to B and
// returns how much B received by the deadline, when its first byte came
// (after the connect; 0 if none did), and the sender's connection for
// inspection (closed at the end of the test).
func transferFor(t *testing.T, p *lab.Pair, size int, deadline time.Duration) (received int64, first time.Duration, c net.Conn) {
	t.Helper()
	ln := listen(t, p.B)
	type result struct {
		n     int64
		first time.Time
	}
	got := make(chan result, 1)
	go func() {
		var r result
		defer func() { got <- r }()
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(deadline))
		buf := make([]byte, 64<<10)
		for {
			k, err := conn.Read(buf)
			if k > 0 && r.n == 0 {
				r.first = time.Now()
			}
			r.n += int64(k)
			if err != nil {
				return
			}
		}
	}()
	c, err := p.A.Dial(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	connected := time.Now()
	t.Cleanup(func() { c.Close() })
	go func() {
		c.Write(make([]byte, size))
		c.(*net.TCPConn).CloseWrite()
	}()
	r := <-got
	if r.n > 0 {
		first = r.first.Sub(connected)
	}
	return r.n, first, c
}

// TestEmulatedMTU checks path MTU discovery against the emulator's MTU:
// with ICMP answers Linux lowers the path MTU and the transfer completes;
// through a black hole full-size segments never arrive (the handshake's
// small segments do). net.ipv4.tcp_mtu_probing=1 (0, off, is the default)
// rescues the connection, slowly: after repeated retransmission timeouts
// (tcp_retries1, 3, of them) TCP takes the hole for an MTU black hole and
// lowers its MSS, and a later retransmission gets through: the first byte
// arrived after 3.2 to 6.5 s in trials.
func TestEmulatedMTU(t *testing.T) {
	const mtu, size = 1400, 1 << 20
	dir := emulator.Impairment{MTU: mtu, Delay: time.Millisecond}
	t.Run("ICMP", func(t *testing.T) {
		p := labtest.Pair(t, emulated(emulator.Config{AtoB: dir, BtoA: dir}))
		got, _, c := transferFor(t, p, size, 5*time.Second)
		info := tcpInfo(t, c)
		ec := p.Emulator().Counters(emulator.AtoB)
		t.Logf("%d of %d bytes; sender pmtu %d, mss %d; %d ICMP sent, %d dropped oversize", got, size, info.Pmtu, info.Snd_mss, ec.ICMPSent, ec.DroppedMTU)
		if got != size {
			t.Errorf("B received %d of %d bytes", got, size)
		}
		if info.Pmtu > mtu || ec.ICMPSent == 0 {
			t.Errorf("sender's path MTU %d after %d ICMP answers, want ≤ %d", info.Pmtu, ec.ICMPSent, mtu)
		}
	})
	black := dir
	black.BlackHole = true
	t.Run("black hole", func(t *testing.T) {
		p := labtest.Pair(t, emulated(emulator.Config{AtoB: black, BtoA: black}))
		got, _, c := transferFor(t, p, size, 2*time.Second)
		info := tcpInfo(t, c)
		ec := p.Emulator().Counters(emulator.AtoB)
		t.Logf("%d bytes in 2 s; sender pmtu %d, %d retransmissions, %d timeouts; %d dropped oversize, %d ICMP",
			got, info.Pmtu, info.Total_retrans, info.Backoff, ec.DroppedMTU, ec.ICMPSent)
		if got != 0 || ec.ICMPSent != 0 || ec.DroppedMTU == 0 {
			t.Errorf("through a black hole: %d bytes arrived, %d ICMP sent, %d dropped", got, ec.ICMPSent, ec.DroppedMTU)
		}
	})
	t.Run("black hole, mtu probing", func(t *testing.T) {
		cfg := emulated(emulator.Config{AtoB: black, BtoA: black})
		cfg.A.Sysctls = map[string]string{"net.ipv4.tcp_mtu_probing": "1"}
		p := labtest.Pair(t, cfg)
		const small = 256 << 10
		start := time.Now()
		got, first, c := transferFor(t, p, small, 7*time.Second)
		info := tcpInfo(t, c)
		t.Logf("tcp_mtu_probing=1: first byte after %v, %d of %d bytes after %v; sender mss %d, %d retransmissions",
			first.Round(time.Millisecond), got, small, time.Since(start).Round(time.Millisecond), info.Snd_mss, info.Total_retrans)
		if got != small || info.Snd_mss+40 > mtu {
			t.Errorf("with MTU probing: %d of %d bytes, mss %d", got, small, info.Snd_mss)
		}
	})
}

// BenchmarkEmulatedThroughput measures one TCP stream from A to B through
// an unimpaired emulator: the emulator's own ceiling, which bounds every
// rate the lab can emulate. Reports Gbit/s of payload.
func BenchmarkEmulatedThroughput(b *testing.B) {
	p := labtest.Pair(b, emulated(emulator.Config{}))
	ln, err := p.B.Listen(b.Context(), "tcp", netip.AddrPortFrom(p.B.Addr, 0).String())
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- 0
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		done <- n
	}()
	c, err := p.A.Dial(b.Context(), "tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const chunk = 1 << 20
	buf := make([]byte, chunk)
	b.SetBytes(chunk)
	start := time.Now()
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	n := <-done
	b.ReportMetric(float64(model.RateOf(model.Bytes(n), time.Since(start).Seconds()))/1e9, "Gbit/s")
}
