// Command soak runs a tcpscope server for a while under legitimate tests
// and a bounded attack mix at once, on loopback, and reports whether
// every legitimate test was served or refused with a reason, how the
// server's memory and file descriptors moved, and what reached an address
// that never asked for anything (bench/soak.sh runs it; results in
// docs/BENCHMARKS.md).
//
// Legitimate: tcpscope TCP and UDP tests and stock iperf3 TCP and UDP
// tests, one after another from each of three workers. Attacks: garbage
// first bytes, slowloris connections that trickle a byte every few
// seconds, hellos that never open their streams, and UDP hellos forged
// from a victim address (raw socket, root only) with random stream keys
// and as iperf3's hello.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

type sample struct {
	At  float64 // seconds since the start
	RSS int64   // bytes
	FDs int
}

type outcome struct {
	Kind   string
	Result string // "served", "refused" (with a reason) or "failed" (without one)
	Reason string
}

func main() {
	bin := flag.String("tcpscope", "bin/tcpscope", "the tcpscope binary")
	iperf3 := flag.String("iperf3", "iperf3", "the stock iperf3 binary")
	dur := flag.Duration("duration", 20*time.Minute, "how long to soak")
	out := flag.String("out", "bench/results/soak", "directory for the samples, the summary and the plot")
	port := flag.Int("port", 5391, "the server's port on 127.0.0.1")
	flag.Parse()
	if err := run(*bin, *iperf3, *dur, *out, *port); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(bin, iperf3 string, dur time.Duration, out string, port int) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logf, err := os.Create(filepath.Join(out, "server.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	srv := exec.Command(bin, "server", "--listen", addr, "--json-log", "--max-duration", "10")
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start the server: %w", err)
	}
	// Stopped by the PID started here, never by name.
	defer func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() }()
	if err := waitListening(addr); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	start := time.Now()

	var samples []sample
	var smu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if s, ok := sampleOf(srv.Process.Pid, time.Since(start)); ok {
				smu.Lock()
				samples = append(samples, s)
				smu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})

	var omu sync.Mutex
	var outcomes []outcome
	record := func(o outcome) { omu.Lock(); outcomes = append(outcomes, o); omu.Unlock() }
	kinds := []struct {
		name string
		cmd  []string
	}{
		{"tcpscope tcp", []string{bin, "test", addr, "-t", "2", "--no-diagnose"}},
		{"tcpscope tcp -R -P 4", []string{bin, "test", addr, "-t", "2", "-R", "-P", "4", "--no-diagnose"}},
		{"tcpscope udp -b 50M", []string{bin, "test", addr, "-u", "-b", "50M", "-t", "2", "--no-diagnose"}},
		{"iperf3 tcp", []string{iperf3, "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "2"}},
		{"iperf3 udp -b 10M", []string{iperf3, "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-u", "-b", "10M", "-t", "2"}},
	}
	for w := range 3 {
		wg.Go(func() {
			for i := w; ctx.Err() == nil; i++ {
				k := kinds[i%len(kinds)]
				record(legit(ctx, k.name, k.cmd))
			}
		})
	}

	var attacks attackCounts
	wg.Go(func() { garbage(ctx, addr, &attacks) })
	wg.Go(func() { slowloris(ctx, addr, &attacks) })
	wg.Go(func() { hoard(ctx, addr, &attacks) })
	victim, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 77)})
	if err != nil {
		return fmt.Errorf("victim socket: %w", err)
	}
	var victimBytes, victimDatagrams, victimOver26 atomic.Int64
	go func() {
		buf := make([]byte, 65536)
		for {
			n, _, err := victim.ReadFromUDP(buf)
			if err != nil {
				return
			}
			victimBytes.Add(int64(n))
			victimDatagrams.Add(1)
			if n > 26 {
				victimOver26.Add(1)
			}
		}
	}()
	spoofOK := true
	wg.Go(func() {
		spoofOK = reflect(ctx, victim.LocalAddr().(*net.UDPAddr), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}, &attacks)
	})
	wg.Wait()
	time.Sleep(time.Second) // datagrams still on their way to the victim
	victim.Close()

	return report(out, dur, samples, outcomes, &attacks, spoofOK, victimBytes.Load(), victimDatagrams.Load(), victimOver26.Load())
}

func waitListening(addr string) error {
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no server on %s", addr)
}

// sampleOf reads a process's resident memory and open descriptors.
func sampleOf(pid int, at time.Duration) (sample, bool) {
	s := sample{At: at.Seconds()}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			s.RSS = kb * 1024
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, false
	}
	s.FDs = len(fds)
	return s, true
}

// legit runs one legitimate test and says how it went: served (exit 0),
// refused with a reason (a non-zero exit with an error line that says
// why), or failed (no reason given).
func legit(ctx context.Context, name string, argv []string) outcome {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	b, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return outcome{Kind: name, Result: "cut", Reason: "the soak ended"}
	}
	if err == nil {
		return outcome{Kind: name, Result: "served"}
	}
	line := lastLine(string(b))
	for _, why := range []string{"busy", "limit", "try again", "server going away"} {
		if strings.Contains(line, why) {
			return outcome{Kind: name, Result: "refused", Reason: line}
		}
	}
	return outcome{Kind: name, Result: "failed", Reason: line}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.Contains(l, "error") || strings.HasPrefix(l, "tcpscope:") {
			return l
		}
	}
	return lines[len(lines)-1]
}

// attacker dials from its own loopback address: the per-address limits
// are what keep it from the legitimate clients' share.
var attacker = net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 66)}}

type attackCounts struct {
	garbage, slowloris, hoarded, forged atomic.Int64
}

// garbage: 20 connections a second that send random first bytes.
func garbage(ctx context.Context, addr string, n *attackCounts) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	buf := make([]byte, 512)
	for ctx.Err() == nil {
		if c, err := attacker.Dial("tcp", addr); err == nil {
			_, _ = rand.Read(buf)
			_, _ = c.Write(buf)
			c.Close()
			n.garbage.Add(1)
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// holding keeps n attacking connections open at once, each dialled
// anew (after a pause, not in a busy loop) when hold returns.
func holding(ctx context.Context, addr string, n int, count *atomic.Int64, hold func(net.Conn)) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				c, err := attacker.Dial("tcp", addr)
				if err != nil {
					sleep(ctx, time.Second)
					continue
				}
				count.Add(1)
				hold(c)
				c.Close()
				sleep(ctx, 100*time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// slowloris: 64 connections at once, each trickling a byte of the
// control magic every 3 s; renewed as the server closes them.
func slowloris(ctx context.Context, addr string, n *attackCounts) {
	holding(ctx, addr, 64, &n.slowloris, func(c net.Conn) {
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := c.Write([]byte{"TCPSCOPE"[i%8]}); err != nil {
				return
			}
			sleep(ctx, 3*time.Second)
		}
	})
}

// hoard: 16 hellos at once that never open their streams, renewed as
// the server drops them.
func hoard(ctx context.Context, addr string, n *attackCounts) {
	body, _ := json.Marshal(map[string]any{"type": "hello", "hello": map[string]any{"protocol": 3, "version": "soak", "config": map[string]any{"duration_ns": 5e9}}})
	hello := append(binary.BigEndian.AppendUint32([]byte("TCPSCOPE"), uint32(len(body))), body...)
	holding(ctx, addr, 16, &n.hoarded, func(c net.Conn) {
		_, _ = c.Write(hello)
		buf := make([]byte, 4096)
		for ctx.Err() == nil {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	})
}

// reflect forges UDP hellos from the victim's address, 100 a second:
// native hellos with random stream keys, and iperf3's. It reports
// whether it could forge (a raw socket needs root).
func reflect(ctx context.Context, victim, server *net.UDPAddr, n *attackCounts) bool {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for i := 0; ctx.Err() == nil; i++ {
		var payload []byte
		if i%2 == 0 {
			key := make([]byte, 16)
			_, _ = rand.Read(key)
			payload = binary.BigEndian.AppendUint16(append([]byte("TCPSCOPU"), key...), 0)
		} else {
			payload = []byte("9876")
		}
		if spoof(fd, victim, server, payload) == nil {
			n.forged.Add(1)
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return true
}

// spoof sends one UDP datagram from src to dst through a raw socket.
func spoof(fd int, src, dst *net.UDPAddr, payload []byte) error {
	udpLen := 8 + len(payload)
	pkt := make([]byte, 20+udpLen)
	pkt[0] = 0x45
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	pkt[8] = 64
	pkt[9] = syscall.IPPROTO_UDP
	copy(pkt[12:16], src.IP.To4())
	copy(pkt[16:20], dst.IP.To4())
	binary.BigEndian.PutUint16(pkt[20:], uint16(src.Port))
	binary.BigEndian.PutUint16(pkt[22:], uint16(dst.Port))
	binary.BigEndian.PutUint16(pkt[24:], uint16(udpLen))
	copy(pkt[28:], payload)
	var to syscall.SockaddrInet4
	copy(to.Addr[:], dst.IP.To4())
	return syscall.Sendto(fd, pkt, 0, &to)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func report(out string, dur time.Duration, samples []sample, outcomes []outcome, a *attackCounts, spoofed bool, vBytes, vDatagrams, vOver26 int64) error {
	type tally struct{ Served, Refused, Failed int }
	cut := 0
	byKind := map[string]*tally{}
	reasons := map[string]int{}
	var failures []string
	for _, o := range outcomes {
		t := byKind[o.Kind]
		if t == nil {
			t = &tally{}
			byKind[o.Kind] = t
		}
		switch o.Result {
		case "served":
			t.Served++
		case "refused":
			t.Refused++
			reasons[o.Reason]++
		case "cut":
			cut++
		case "failed":
			t.Failed++
			failures = append(failures, o.Kind+": "+o.Reason)
		}
	}
	var rssMin, rssMax int64 = 1 << 62, 0
	fdMin, fdMax := 1<<30, 0
	for _, s := range samples {
		rssMin, rssMax = min(rssMin, s.RSS), max(rssMax, s.RSS)
		fdMin, fdMax = min(fdMin, s.FDs), max(fdMax, s.FDs)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "soak of %v on loopback: %d legitimate tests (%d cut short by the soak's end), %d garbage connections, %d slowloris connections, %d hoarded hellos, %d forged UDP hellos",
		dur, len(outcomes), cut, a.garbage.Load(), a.slowloris.Load(), a.hoarded.Load(), a.forged.Load())
	if !spoofed {
		b.WriteString(" (not root: no forged hellos)")
	}
	b.WriteString("\n\n| test | served | refused with a reason | failed without one |\n|---|---|---|---|\n")
	names := make([]string, 0, len(byKind))
	for k := range byKind {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t := byKind[k]
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", k, t.Served, t.Refused, t.Failed)
	}
	fmt.Fprintf(&b, "\nserver RSS %.1f–%.1f MiB, open descriptors %d–%d (sampled every second)\n", float64(rssMin)/(1<<20), float64(rssMax)/(1<<20), fdMin, fdMax)
	fmt.Fprintf(&b, "at the forged address: %d datagrams, %d bytes, %d larger than a 26-byte answer\n", vDatagrams, vBytes, vOver26)
	for r, n := range reasons {
		fmt.Fprintf(&b, "refused %d×: %s\n", n, r)
	}
	for _, f := range failures {
		fmt.Fprintf(&b, "FAILED: %s\n", f)
	}
	fmt.Print(b.String())
	if err := os.WriteFile(filepath.Join(out, "summary.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	csv := "seconds,rss_bytes,fds\n"
	for _, s := range samples {
		csv += fmt.Sprintf("%.0f,%d,%d\n", s.At, s.RSS, s.FDs)
	}
	if err := os.WriteFile(filepath.Join(out, "samples.csv"), []byte(csv), 0o644); err != nil {
		return err
	}
	if err := plotSamples(filepath.Join(out, "soak.png"), samples); err != nil {
		return err
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d legitimate tests failed without a reason", len(failures))
	}
	return nil
}

func plotSamples(file string, samples []sample) error {
	p := plot.New()
	p.Title.Text = "tcpscope server under a soak: memory and descriptors"
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "RSS (MiB) / open descriptors"
	rss := make(plotter.XYs, len(samples))
	fds := make(plotter.XYs, len(samples))
	for i, s := range samples {
		rss[i] = plotter.XY{X: s.At, Y: float64(s.RSS) / (1 << 20)}
		fds[i] = plotter.XY{X: s.At, Y: float64(s.FDs)}
	}
	lr, err := plotter.NewLine(rss)
	if err != nil {
		return err
	}
	lf, err := plotter.NewLine(fds)
	if err != nil {
		return err
	}
	lf.Color = color.RGBA{R: 200, A: 255}
	p.Add(lr, lf)
	p.Legend.Add("RSS (MiB)", lr)
	p.Legend.Add("open descriptors", lf)
	p.Legend.Top = true
	return p.Save(8*vg.Inch, 4*vg.Inch, file)
}
