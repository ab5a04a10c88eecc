package lab_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
)

// listenB opens a TCP listener on B's address inside B.
func listenB(t *testing.T, p *lab.Pair) net.Listener {
	t.Helper()
	return listen(t, p.B)
}

// listen opens a TCP listener on h's address inside h.
func listen(t *testing.T, h *lab.Host) net.Listener {
	t.Helper()
	ln, err := h.Listen(t.Context(), "tcp", netip.AddrPortFrom(h.Addr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// output runs a command inside h and returns its stdout.
func output(t *testing.T, h *lab.Host, name string, args ...string) string {
	t.Helper()
	out, err := h.Command(t.Context(), name, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%s %v in %s: %v: %s", name, args, h.Name, err, ee.Stderr)
		}
		t.Fatalf("%s %v in %s: %v", name, args, h.Name, err)
	}
	return string(out)
}

// netnsListed reports which of names `ip netns list` still shows.
func netnsListed(t *testing.T, names ...string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	var listed []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		for _, n := range names {
			if len(f) > 0 && f[0] == n {
				listed = append(listed, n)
			}
		}
	}
	return listed
}

// ownNamespaces lists the namespaces this process has created and not
// removed.
func ownNamespaces(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	var own []string
	prefix := fmt.Sprintf("%s%d-", lab.NamePrefix, os.Getpid())
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			own = append(own, f[0])
		}
	}
	return own
}

func tcpInfo(t *testing.T, c net.Conn) *unix.TCPInfo {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return info
}

func TestConnectivity(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{})
	if !p.A.Prefix.Contains(p.A.Addr) || !p.B.Prefix.Contains(p.B.Addr) || p.A.Prefix.Overlaps(p.B.Prefix) {
		t.Fatalf("A %v in %v, B %v in %v: want each host in its own subnet", p.A.Addr, p.A.Prefix, p.B.Addr, p.B.Prefix)
	}
	if p.R.Prefix != p.A.Prefix || !p.R.Prefix.Contains(p.R.Addr) || p.R.Addr == p.A.Addr {
		t.Fatalf("R %v in %v: want A's gateway on A's subnet %v", p.R.Addr, p.R.Prefix, p.A.Prefix)
	}
	ln := listenB(t, p)
	type accepted struct {
		peer net.Addr
		msg  string
		err  error
	}
	got := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- accepted{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		msg, err := bufio.NewReader(c).ReadString('\n')
		if err == nil {
			_, err = io.WriteString(c, "hello from B\n")
		}
		got <- accepted{c.RemoteAddr(), msg, err}
	}()

	c, err := p.A.Dial(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "hello from A\n"); err != nil {
		t.Fatal(err)
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || reply != "hello from B\n" {
		t.Fatalf("reply %q, %v", reply, err)
	}
	a := <-got
	if a.err != nil || a.msg != "hello from A\n" {
		t.Fatalf("B got %q, %v", a.msg, a.err)
	}
	if peer := a.peer.(*net.TCPAddr).AddrPort().Addr(); peer != p.A.Addr {
		t.Errorf("B saw the connection come from %v, want A's %v", peer, p.A.Addr)
	}
	// The conversation went through R: it forwarded at least the
	// handshake and both lines, each way.
	if n := forwarded(t, p.R); n < 6 {
		t.Errorf("R forwarded %d datagrams, want the connection's", n)
	}
}

// forwarded reads Ip ForwDatagrams, the datagrams h has forwarded, from
// its /proc/net/snmp.
func forwarded(t *testing.T, h *lab.Host) int64 {
	t.Helper()
	var names []string
	for line := range strings.Lines(output(t, h, "cat", "/proc/net/snmp")) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Ip:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		if i := slices.Index(names, "ForwDatagrams"); i > 0 && i < len(f) {
			n, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no Ip ForwDatagrams in %s's /proc/net/snmp", h.Name)
	return 0
}

// TestIsolated checks that nothing in the pair leads outside it: only
// loopback and the veths exist, the only routes are the two links' subnets,
// and an outside address is unreachable without a packet being sent.
func TestIsolated(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{})
	toA, toB := p.RouterLinks(lab.AtoB) // A→B enters R from A and leaves toward B
	for _, tc := range []struct {
		h      *lab.Host
		links  []string
		routes []string
	}{
		{p.A, []string{p.A.Link}, []string{
			p.A.Prefix.String() + " dev " + p.A.Link,
			p.B.Prefix.String() + " via " + p.R.Addr.String() + " dev " + p.A.Link,
		}},
		{p.B, []string{p.B.Link}, []string{
			p.A.Prefix.String() + " via ", // B's gateway is R's address on B's side
			p.B.Prefix.String() + " dev " + p.B.Link,
		}},
		{p.R, []string{toA, toB}, []string{
			p.A.Prefix.String() + " dev " + toA,
			p.B.Prefix.String() + " dev " + toB,
		}},
	} {
		links := output(t, tc.h, "ip", "-o", "link", "show")
		ok := strings.Count(links, "\n") == 1+len(tc.links) && strings.Contains(links, " lo:")
		for _, l := range tc.links {
			ok = ok && strings.Contains(links, " "+l+"@")
		}
		if !ok {
			t.Errorf("%s has links:\n%s", tc.h.Name, links)
		}
		routes := strings.Split(strings.TrimSpace(output(t, tc.h, "ip", "-4", "route", "show")), "\n")
		slices.Sort(routes)
		ok = len(routes) == len(tc.routes)
		for i := range min(len(routes), len(tc.routes)) {
			ok = ok && strings.HasPrefix(routes[i], tc.routes[i])
		}
		if !ok {
			t.Errorf("%s has routes:\n%s\nwant lines starting %q", tc.h.Name, strings.Join(routes, "\n"), tc.routes)
		}
	}
	for _, h := range []*lab.Host{p.A, p.R} {
		_, err := h.Dial(t.Context(), "tcp", "192.0.2.1:9") // TEST-NET-1
		if !errors.Is(err, unix.ENETUNREACH) {
			t.Errorf("dialling outside from %s: %v, want network unreachable", h.Name, err)
		}
	}
}

func threadNetns(t *testing.T) string {
	t.Helper()
	s, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDo(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{})
	runtime.LockOSThread()
	home := threadNetns(t)
	runtime.UnlockOSThread()

	var inA, inB, inR string
	if err := p.A.Do(func() error { inA = threadNetns(t); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := p.B.Do(func() error { inB = threadNetns(t); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := p.R.Do(func() error { inR = threadNetns(t); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(map[string]bool{home: true, inA: true, inB: true, inR: true}) != 4 {
		t.Fatalf("namespaces: home %s, A %s, B %s, R %s; want four different", home, inA, inB, inR)
	}

	want := errors.New("from fn")
	if err := p.A.Do(func() error { return want }); err != want {
		t.Errorf("Do returned %v, want fn's error", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the panic re-raised in the caller", r)
			}
		}()
		p.A.Do(func() error { panic("boom") })
	}()

	if err := p.A.Do(func() error { runtime.Goexit(); return nil }); err == nil {
		t.Error("Do returned nil after fn called runtime.Goexit")
	}

	// Every thread Do used went back home (or was discarded): none of the
	// threads goroutines now run on is left in a lab namespace.
	for range 50 {
		p.A.Do(func() error { return nil })
	}
	errs := make(chan string, 64)
	for range cap(errs) {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			s, _ := os.Readlink("/proc/thread-self/ns/net")
			errs <- s
		}()
	}
	for range cap(errs) {
		if s := <-errs; s != home {
			t.Fatalf("a thread is in %s after Do, want %s", s, home)
		}
	}
}

func TestSysctls(t *testing.T) {
	keys := []string{"net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps", "net.ipv4.tcp_window_scaling",
		"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_ecn"}
	hostBefore := map[string]string{}
	for _, k := range keys {
		hostBefore[k] = readHostSysctl(t, k)
	}

	p := labtest.Pair(t, lab.PairConfig{
		A: lab.HostConfig{
			SACK: lab.Off, Timestamps: lab.Off, WindowScaling: lab.Off,
			Rmem:              lab.BufferSizes{Min: 4096, Default: 65536, Max: 1 * model.MiB},
			Wmem:              lab.BufferSizes{Min: 4096, Default: 32768, Max: 2 * model.MiB},
			CongestionControl: "reno", // built into every kernel
			Sysctls:           map[string]string{"net.ipv4.tcp_ecn": "1"},
		},
		B: lab.HostConfig{Rmem: lab.BufferSizes{Min: 8192, Default: 131072, Max: 3 * model.MiB}},
	})
	wantA := map[string]string{
		"net.ipv4.tcp_sack":               "0",
		"net.ipv4.tcp_timestamps":         "0",
		"net.ipv4.tcp_window_scaling":     "0",
		"net.ipv4.tcp_rmem":               "4096 65536 1048576",
		"net.ipv4.tcp_wmem":               "4096 32768 2097152",
		"net.ipv4.tcp_congestion_control": "reno",
		"net.ipv4.tcp_ecn":                "1",
	}
	for k, want := range wantA {
		got, err := p.A.Sysctl(k)
		if err != nil {
			t.Fatal(err)
		}
		if norm(got) != want {
			t.Errorf("A %s = %q, want %q", k, got, want)
		}
		// Read once more by another road, a process in the namespace,
		// so the check does not rest on Do alone.
		file := "/proc/sys/" + strings.ReplaceAll(k, ".", "/")
		if got := norm(output(t, p.A, "cat", file)); got != want {
			t.Errorf("cat %s in A = %q, want %q", file, got, want)
		}
	}
	if got, _ := p.B.Sysctl("net.ipv4.tcp_rmem"); norm(got) != "8192 131072 3145728" {
		t.Errorf("B tcp_rmem = %q", got)
	}
	if got, _ := p.B.Sysctl("net.ipv4.tcp_sack"); got != "1" {
		t.Errorf("B tcp_sack = %q, want the kernel default 1 (A's setting leaked?)", got)
	}
	if got, _ := p.R.Sysctl("net.ipv4.tcp_sack"); got != "1" {
		t.Errorf("R tcp_sack = %q, want the kernel default 1: host settings are A's and B's only", got)
	}
	for _, h := range []*lab.Host{p.A, p.B, p.R} {
		want := map[*lab.Host]string{p.R: "1"}[h]
		if want == "" {
			want = "0"
		}
		if got, err := h.Sysctl("net.ipv4.ip_forward"); err != nil || got != want {
			t.Errorf("%s ip_forward = %q, %v; want %s", h.Name, got, err, want)
		}
	}
	for _, k := range keys {
		if got := readHostSysctl(t, k); got != hostBefore[k] {
			t.Errorf("host %s changed from %q to %q", k, hostBefore[k], got)
		}
	}

	// The settings act: a connection from A, which turned the options
	// off, negotiates none of them.
	ln := listenB(t, p)
	go func() {
		if c, err := ln.Accept(); err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	c, err := p.A.Dial(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// TCPI_OPT_TIMESTAMPS, _SACK and _WSCALE from include/uapi/linux/tcp.h.
	const negotiated = 1 | 2 | 4
	if opts := tcpInfo(t, c).Options; opts&negotiated != 0 {
		t.Errorf("tcpi_options %#x: want no timestamps, SACK or window scaling", opts)
	}

	if err := p.A.SetSysctl("kernel.pid_max", "1"); err == nil {
		t.Error("SetSysctl accepted a non-net key, which is host-wide")
	}
	if err := p.A.SetSysctl("net.ipv4.tcp_no_such_thing", "1"); err == nil || !strings.Contains(err.Error(), "no such sysctl") {
		t.Errorf("SetSysctl of a missing key: %v", err)
	}
}

func readHostSysctl(t *testing.T, key string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(key, ".", "/"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// norm collapses the kernel's tabs in multi-value sysctls.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestRmemMaxHostWide records what this kernel does with net.core.rmem_max
// and wmem_max in a namespace: they are the host's, read-only. Asking for
// another value fails without a trace; asking for the host's value passes.
func TestRmemMaxHostWide(t *testing.T) {
	labtest.Require(t)
	host, err := strconv.ParseInt(readHostSysctl(t, "net.core.rmem_max"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lab.NewPair(t.Context(), lab.PairConfig{B: lab.HostConfig{RmemMax: model.Bytes(host + 4096)}})
	if !errors.Is(err, lab.ErrHostWide) {
		t.Fatalf("NewPair with rmem_max ≠ host's: %v, want ErrHostWide", err)
	}
	t.Logf("as expected: %v", err)
	if left := ownNamespaces(t); len(left) != 0 {
		t.Errorf("the failed NewPair left %v behind", left)
	}
	if got := readHostSysctl(t, "net.core.rmem_max"); got != strconv.FormatInt(host, 10) {
		t.Errorf("host rmem_max changed to %s", got)
	}

	p := labtest.Pair(t, lab.PairConfig{A: lab.HostConfig{RmemMax: model.Bytes(host)}})
	if got, err := p.A.Sysctl("net.core.rmem_max"); err == nil && got != strconv.FormatInt(host, 10) {
		t.Errorf("rmem_max in A = %s, host %d", got, host)
	}
	err = p.A.SetSysctl("net.core.wmem_max", "1048576")
	if err == nil {
		t.Log("this kernel lets a namespace set its own wmem_max")
	} else if !errors.Is(err, lab.ErrHostWide) {
		t.Errorf("setting wmem_max in a namespace: %v, want ErrHostWide", err)
	}
}

func TestRate(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{AtoB: lab.Impairment{Rate: 100 * model.MbitPerSecond}})
	toA, toB := p.RouterLinks(lab.AtoB) // A→B enters R from A and leaves toward B
	qdisc := func(h *lab.Host, link string) string {
		return output(t, h, "tc", "qdisc", "show", "dev", link)
	}
	// A→B is shaped where it leaves R toward B, and nowhere else.
	if qd := qdisc(p.R, toB); !strings.Contains(qd, "tbf") || !strings.Contains(qd, "rate 100Mbit") {
		t.Errorf("R's qdisc toward B:\n%s", qd)
	}
	for _, c := range []struct {
		h    *lab.Host
		link string
	}{{p.R, toA}, {p.A, p.A.Link}, {p.B, p.B.Link}} {
		if qd := qdisc(c.h, c.link); strings.Contains(qd, "tbf") {
			t.Errorf("only A→B is limited, in R toward B, but %s %s has:\n%s", c.h.Name, c.link, qd)
		}
	}
	if got := p.Impairment(lab.AtoB); got.Burst != 50_000 || got.Queue != lab.DefaultQueue {
		t.Errorf("Impairment(AtoB) = %+v, want the resolved defaults", got)
	}

	ctx := t.Context()
	if err := p.SetImpairment(ctx, lab.AtoB, lab.Impairment{Rate: 20 * model.MbitPerSecond}); err != nil {
		t.Fatal(err)
	}
	if qd := qdisc(p.R, toB); !strings.Contains(qd, "rate 20Mbit") {
		t.Errorf("after SetImpairment(20 Mbit/s):\n%s", qd)
	}
	if err := p.SetImpairment(ctx, lab.BtoA, lab.Impairment{Rate: 5 * model.MbitPerSecond}); err != nil {
		t.Fatal(err)
	}
	if qd := qdisc(p.R, toA); !strings.Contains(qd, "rate 5Mbit") {
		t.Errorf("B→A at 5 Mbit/s, R's qdisc toward A:\n%s", qd)
	}
	if err := p.SetImpairment(ctx, lab.AtoB, lab.Impairment{}); err != nil {
		t.Fatal(err)
	}
	if qd := qdisc(p.R, toB); strings.Contains(qd, "tbf") {
		t.Errorf("after removing the rate:\n%s", qd)
	}
	if qd := qdisc(p.R, toA); !strings.Contains(qd, "rate 5Mbit") {
		t.Errorf("removing A→B's rate touched B→A's:\n%s", qd)
	}
}

func TestLossRule(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{BtoA: lab.Impairment{Loss: 0.05}})
	// B→A loss drops on arrival in R from B.
	fromB, _ := p.RouterLinks(lab.BtoA)
	rules := output(t, p.R, "nft", "list", "ruleset")
	for _, want := range []string{`hook ingress device "` + fromB + `"`, "numgen random mod 1000000000 < 50000000", "drop"} {
		if !strings.Contains(rules, want) {
			t.Errorf("R's ruleset lacks %q:\n%s", want, rules)
		}
	}
	if strings.Count(rules, "numgen") != 1 {
		t.Errorf("A→B is lossless but R has:\n%s", rules)
	}
	for _, h := range []*lab.Host{p.A, p.B} {
		if rules := output(t, h, "nft", "list", "ruleset"); strings.Contains(rules, "numgen") {
			t.Errorf("loss belongs in R, but %s has:\n%s", h.Name, rules)
		}
	}
	// Both directions lossy: two rules side by side; removing one keeps
	// the other.
	if err := p.SetImpairment(t.Context(), lab.AtoB, lab.Impairment{Loss: 0.02}); err != nil {
		t.Fatal(err)
	}
	fromA, _ := p.RouterLinks(lab.AtoB)
	if rules := output(t, p.R, "nft", "list", "ruleset"); strings.Count(rules, "numgen") != 2 || !strings.Contains(rules, `device "`+fromA+`"`) {
		t.Errorf("with loss both ways R has:\n%s", rules)
	}
	if err := p.SetImpairment(t.Context(), lab.BtoA, lab.Impairment{}); err != nil {
		t.Fatal(err)
	}
	if rules := output(t, p.R, "nft", "list", "ruleset"); strings.Contains(rules, fromB) || !strings.Contains(rules, "< 20000000") {
		t.Errorf("after removing B→A's loss:\n%s", rules)
	}
	if n, err := p.Dropped(t.Context(), lab.BtoA); n != 0 || err != nil {
		t.Errorf("Dropped without a rule = %d, %v", n, err)
	}
}

// TestLinks checks that MTU and offload apply to all four veth ends, and
// that without offload the router receives single frames, so a drop there
// is one packet.
func TestLinks(t *testing.T) {
	labtest.Require(t)
	for _, offload := range []bool{false, true} {
		t.Run(fmt.Sprintf("offload=%v", offload), func(t *testing.T) {
			p := labtest.Pair(t, lab.PairConfig{MTU: 9000, Offload: offload})
			fromA, fromB := p.RouterLinks(lab.AtoB)
			ends := []struct {
				h    *lab.Host
				link string
			}{{p.A, p.A.Link}, {p.R, fromA}, {p.R, fromB}, {p.B, p.B.Link}}
			for _, e := range ends {
				info := output(t, e.h, "ip", "-d", "link", "show", "dev", e.link)
				oneSeg := strings.Contains(info, " gso_max_segs 1 ")
				if !strings.Contains(info, " mtu 9000 ") || oneSeg == offload {
					t.Errorf("%s %s: want mtu 9000 and gso_max_segs 1 only without offload:\n%s", e.h.Name, e.link, info)
				}
			}
			if offload {
				return
			}
			stat := func(name string) int64 {
				v := strings.TrimSpace(output(t, p.R, "cat", "/sys/class/net/"+fromA+"/statistics/"+name))
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			bytes0, pkts0 := stat("rx_bytes"), stat("rx_packets")
			n, _, _ := transfer(t, p.A, p.B, 200*time.Millisecond)
			bytes, pkts := stat("rx_bytes")-bytes0, stat("rx_packets")-pkts0
			if pkts == 0 || bytes < n {
				t.Fatalf("R received %d bytes in %d packets from A for %d bytes of payload", bytes, pkts, n)
			}
			if avg := bytes / pkts; avg > 9000+14 {
				t.Errorf("R received %d-byte skbs from A on average, want single frames of at most 9014", avg)
			}
		})
	}
}

// TestCommandErrors checks that a failing tool's command line and stderr
// reach the error.
func TestCommandErrors(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{})
	// Deleting one veth end deletes both; tc then has no device.
	_, toB := p.RouterLinks(lab.AtoB)
	output(t, p.B, "ip", "link", "del", p.B.Link)
	err := p.SetImpairment(t.Context(), lab.AtoB, lab.Impairment{Rate: model.MbitPerSecond})
	if err == nil {
		t.Fatal("SetImpairment on a deleted link succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"lab: tc -n " + p.R.Name + " qdisc replace dev " + toB + " root tbf", "Cannot find device", "exit status"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

// transfer sends from one host to the other until dur has passed and
// returns what the receiver got and over how long (first byte to end of
// stream), plus the sender's TCP_INFO at the end.
func transfer(t *testing.T, from, to *lab.Host, dur time.Duration) (n int64, elapsed time.Duration, info *unix.TCPInfo) {
	t.Helper()
	ln := listen(t, to)
	type result struct {
		n       int64
		elapsed time.Duration
		err     error
	}
	done := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(dur + 10*time.Second))
		buf := make([]byte, 256<<10)
		var r result
		var start time.Time
		for {
			k, err := c.Read(buf)
			if k > 0 && r.n == 0 {
				start = time.Now()
			}
			r.n += int64(k)
			if err == io.EOF {
				break
			}
			if err != nil {
				r.err = err
				break
			}
		}
		r.elapsed = time.Since(start)
		done <- r
	}()

	c, err := from.Dial(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 128<<10)
	end := time.Now().Add(dur)
	c.SetWriteDeadline(end.Add(10 * time.Second))
	for time.Now().Before(end) {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.n, r.elapsed, tcpInfo(t, c)
}

// TestThroughput checks the tbf's physics: 100 Mbit/s of frames carry about
// 95.6 Mbit/s of TCP payload (1448 of every 1514 bytes). The window allows
// for scheduling noise, not for a mis-sized bucket or queue.
func TestThroughput(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{AtoB: lab.Impairment{Rate: 100 * model.MbitPerSecond}})
	n, elapsed, info := transfer(t, p.A, p.B, 3*time.Second)
	got := model.RateOf(model.Bytes(n), elapsed.Seconds())
	t.Logf("%s in %v: %v, %d retransmitted", model.Bytes(n), elapsed.Round(time.Millisecond), got, info.Total_retrans)
	if got < 85*model.MbitPerSecond || got > 101*model.MbitPerSecond {
		t.Errorf("goodput %v over a 100 Mbit/s tbf, want 85 to 101 Mbit/s", got)
	}
}

// TestLossCounted checks that the router's random drop is loss to TCP, in
// both directions: the sender retransmits.
func TestLossCounted(t *testing.T) {
	labtest.Require(t)
	for _, d := range []lab.Dir{lab.AtoB, lab.BtoA} {
		t.Run(d.String(), func(t *testing.T) {
			cfg := lab.PairConfig{AtoB: lab.Impairment{Loss: 0.01}}
			if d == lab.BtoA {
				cfg = lab.PairConfig{BtoA: lab.Impairment{Loss: 0.01}}
			}
			p := labtest.Pair(t, cfg)
			from, to := p.A, p.B
			if d == lab.BtoA {
				from, to = p.B, p.A
			}
			n, elapsed, info := transfer(t, from, to, 500*time.Millisecond)
			dropped, err := p.Dropped(t.Context(), d)
			if err != nil {
				t.Fatal(err)
			}
			segs := info.Data_segs_out
			t.Logf("%s in %v, %d data segments, %d dropped, %d retransmitted",
				model.Bytes(n), elapsed.Round(time.Millisecond), segs, dropped, info.Total_retrans)
			if dropped == 0 {
				t.Errorf("nothing dropped out of %d segments at 1%% loss", segs)
			}
			// The drop happens beyond the sender, in R, so TCP must see
			// it as loss and retransmit; a drop inside the sender would
			// not. Every drop of data costs a retransmission; spurious
			// ones (a retransmission timer firing early) only add to
			// them. Two packets the sender sends carry no data and are
			// never sent again: the handshake's last ACK (the first data
			// segment acknowledges the same) and its ACK of the
			// receiver's FIN; the rule may drop them too (151 drops
			// against 150 retransmissions failed a run here).
			if uint64(info.Total_retrans)+2 < dropped {
				t.Errorf("%d drops but only %d retransmissions (and at most 2 drops of packets without data)", dropped, info.Total_retrans)
			}
			if back, err := p.Dropped(t.Context(), 1-d); back != 0 || err != nil {
				t.Errorf("%s has no loss rule but Dropped = %d, %v", 1-d, back, err)
			}
		})
	}
}

// TestReceiveWindowLimited is what the router is for. With the bottleneck
// queue in R rather than in the sending host, TCP Small Queues no longer
// throttle the sender, the queue builds, and a 64 KiB receive window
// (window scaling off at B) is what holds a CUBIC sender back: the
// kernel's own limited-time counters say so.
func TestReceiveWindowLimited(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{
		AtoB: lab.Impairment{Rate: 100 * model.MbitPerSecond},
		B: lab.HostConfig{
			WindowScaling: lab.Off,
			Rmem:          lab.BufferSizes{Min: 4096, Default: 64 * model.KiB, Max: 64 * model.KiB},
		},
	})
	ln := listenB(t, p)
	go func() {
		if c, err := ln.Accept(); err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	// The hosts' default congestion control may be BBR, which paces
	// itself below the window; CUBIC fills whatever the receiver allows.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, "cubic")
		})
		return errors.Join(err, serr)
	}}
	var c net.Conn
	if err := p.A.Do(func() (err error) {
		c, err = d.DialContext(t.Context(), "tcp", ln.Addr().String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	start, t0 := tcpInfo(t, c), time.Now()
	buf := make([]byte, 128<<10)
	c.SetWriteDeadline(t0.Add(10 * time.Second))
	for time.Since(t0) < 3*time.Second {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	end, elapsed := tcpInfo(t, c), time.Since(t0)

	const wscale = 4 // TCPI_OPT_WSCALE
	if end.Options&wscale != 0 || end.Snd_wnd > 65535 {
		t.Fatalf("window scaling negotiated (options %#x) or peer window %d > 65535", end.Options, end.Snd_wnd)
	}
	busy := end.Busy_time - start.Busy_time
	rwnd := end.Rwnd_limited - start.Rwnd_limited
	sndbuf := end.Sndbuf_limited - start.Sndbuf_limited
	if busy == 0 {
		t.Fatal("kernel reports no busy time (tcp_info too old for limited-time counters?)")
	}
	frac := float64(rwnd) / float64(busy)
	goodput := model.RateOf(model.Bytes(end.Bytes_acked-start.Bytes_acked), elapsed.Seconds())
	t.Logf("srtt %v (min %v), peer window %d B, cwnd %d segs; rwnd-limited %.2f, sndbuf-limited %.2f of %v busy; goodput %v",
		time.Duration(end.Rtt)*time.Microsecond, time.Duration(end.Min_rtt)*time.Microsecond, end.Snd_wnd, end.Snd_cwnd,
		frac, float64(sndbuf)/float64(busy), (time.Duration(busy) * time.Microsecond).Round(time.Millisecond), goodput)
	if frac <= 0.5 {
		t.Errorf("receive-window-limited for %.2f of busy time, want > 0.5", frac)
	}
	// The window's worth of data queues in R's tbf: the RTT is about the
	// window's drain time at the bottleneck, not the bare path's. The
	// receiver's window moves (autotuning within its 64 KiB), so compare
	// with the drain time of the window it last advertised.
	drain := time.Duration(float64(end.Snd_wnd) * 8 / 100e6 * float64(time.Second))
	if rtt := time.Duration(end.Rtt) * time.Microsecond; rtt < drain/2 {
		t.Errorf("srtt %v, under half the %v a %d-byte window takes at 100 Mbit/s: the bottleneck queue did not build", rtt, drain, end.Snd_wnd)
	}
}

// TestClean plants namespaces named for a dead process and for this one:
// Clean removes the first and spares the second.
func TestClean(t *testing.T) {
	labtest.Require(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadName := fmt.Sprintf("%s%d-1-r", lab.NamePrefix, dead.Process.Pid)
	liveName := fmt.Sprintf("%s%d-999999-a", lab.NamePrefix, os.Getpid())
	for _, n := range []string{deadName, liveName} {
		if out, err := exec.Command("ip", "netns", "add", n).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v: %s", n, err, out)
		}
		t.Cleanup(func() { exec.Command("ip", "netns", "del", n).Run() })
	}
	// A process left in the dead one's namespace is ended with it.
	left := exec.Command("ip", "netns", "exec", deadName, "sleep", "300")
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- left.Wait() }()
	defer left.Process.Kill()
	waitUntil(t, "ip netns exec enters the namespace", func() bool {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", left.Process.Pid))
		return l != "" && l != selfNetns(t)
	})
	c, err := lab.Clean(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Error("the process in the dead one's namespace outlived Clean")
	}
	if c.Processes < 1 || c.Namespaces < 1 {
		t.Errorf("Clean reported %+v, want at least the namespace and its process", c)
	}
	if left := netnsListed(t, deadName, liveName); len(left) != 1 || left[0] != liveName {
		t.Errorf("after Clean: %v listed, want only %s", left, liveName)
	}
}

const childEnv = "TCPSCOPE_LAB_TEST_CHILD"

// TestChildProcess is run by TestTeardown in a child process: it builds a
// pair, reports its names and then fails or waits for a signal.
func TestChildProcess(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("helper of TestTeardown; runs only in its child process")
	}
	p := labtest.Pair(t, lab.PairConfig{AtoB: lab.Impairment{Rate: 10 * model.MbitPerSecond, Loss: 0.01}})
	fmt.Printf("PAIR %s %s %s\n", p.A.Name, p.B.Name, p.R.Name)
	switch mode {
	case "fatal":
		t.Fatal("failing on purpose after building a pair")
	case "wait":
		waitToBeEnded(t) // by the parent's signal
	case "shell":
		// As a lab shell with a job in the background: the shell is
		// this process's child, the job is not.
		sh := p.A.Command(context.Background(), "sh", "-c", "sleep 300 & echo JOB $$ $!; wait")
		sh.Stdout = os.Stdout
		if err := sh.Start(); err != nil {
			t.Fatal(err)
		}
		waitToBeEnded(t) // by the parent's SIGKILL
	}
}

// waitToBeEnded keeps this child process alive for its parent to end it
// (nothing here is waited for: the parent's signal is the end), and fails
// the child if that has not come within 20 s.
func waitToBeEnded(t *testing.T) {
	time.Sleep(20 * time.Second)
	t.Fatal("the parent did not end this process within 20 s")
}

// TestTeardown checks every way a test binary can end: a failing test and
// SIGINT/SIGTERM tear the pair down at once; after SIGKILL the pair stays
// until Clean.
func TestTeardown(t *testing.T) {
	labtest.Require(t)
	for _, tc := range []struct {
		name string
		mode string
		sig  syscall.Signal
	}{
		{"t.Fatal", "fatal", 0},
		{"SIGINT", "wait", syscall.SIGINT},
		{"SIGTERM", "wait", syscall.SIGTERM},
		{"SIGKILL", "wait", syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildProcess$", "-test.v", "-test.timeout=60s")
			cmd.Env = append(os.Environ(), childEnv+"="+tc.mode)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var names []string
			var transcript strings.Builder
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				transcript.WriteString(sc.Text() + "\n")
				if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "PAIR" {
					names = f[1:]
					break
				}
			}
			if names == nil {
				cmd.Wait()
				t.Fatalf("child reported no pair:\n%s%s", transcript.String(), stderr.String())
			}
			if tc.sig != 0 {
				if err := cmd.Process.Signal(tc.sig); err != nil {
					t.Fatal(err)
				}
			}
			rest, _ := io.ReadAll(stdout)
			transcript.Write(rest)
			if err := cmd.Wait(); err == nil {
				t.Fatalf("child passed; want it to fail or die:\n%s", transcript.String())
			}
			// The signal handler must not swallow the signal: the child
			// has to die of it, as it would have without labtest.
			if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); tc.sig != 0 && (!ws.Signaled() || ws.Signal() != tc.sig) {
				t.Errorf("child ended with %v, want death by %v", cmd.ProcessState, tc.sig)
			}
			if tc.sig == syscall.SIGKILL {
				if left := netnsListed(t, names...); len(left) != 3 {
					t.Fatalf("after SIGKILL %v listed, want all of %v left behind", left, names)
				}
				if _, err := lab.Clean(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if left := netnsListed(t, names...); len(left) != 0 {
				t.Errorf("%v still listed after the child ended:\n%s%s", left, transcript.String(), stderr.String())
			}
		})
	}
}

// A lab shell's owner killed by SIGKILL (no cleanup runs) takes its
// shell with it, and Clean ends the job the shell left in the background
// rather than leave it running in a namespace nobody can name. Before,
// both lived on and Clean reported no leftovers.
func TestKilledShellLeavesNothing(t *testing.T) {
	labtest.Require(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildProcess$", "-test.v", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), childEnv+"=shell")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var names []string
	var shell, job int
	var transcript strings.Builder
	sc := bufio.NewScanner(stdout)
	for (names == nil || job == 0) && sc.Scan() {
		transcript.WriteString(sc.Text() + "\n")
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 4 && f[0] == "PAIR":
			names = f[1:]
		case len(f) == 3 && f[0] == "JOB":
			shell, _ = strconv.Atoi(f[1])
			job, _ = strconv.Atoi(f[2])
		}
	}
	if names == nil || shell == 0 || job == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child reported no pair or job:\n%s", transcript.String())
	}
	// The job is ended by pid whatever happens below.
	defer syscall.Kill(job, syscall.SIGKILL)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stdout)
	cmd.Wait()
	switch {
	case signal.Ignored(syscall.SIGHUP):
		// Started under nohup: the shell inherits SIGHUP ignored, as a
		// terminal's would, so its hangup cannot end it; Clean must.
		t.Logf("SIGHUP is ignored here (nohup?): the shell's hangup is not tested, Clean's is")
	case !gone(shell, 5*time.Second):
		syscall.Kill(shell, syscall.SIGKILL)
		t.Errorf("the shell (pid %d) outlived the process that started it", shell)
	}
	if gone(job, 0) {
		t.Fatalf("the background job (pid %d) died with its shell: nothing left for Clean to do", job)
	}
	c, err := lab.Clean(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !gone(job, 5*time.Second) {
		t.Errorf("the background job (pid %d) still runs after Clean", job)
	}
	if c.Processes < 1 || c.Namespaces < 3 {
		t.Errorf("Clean reported %+v, want the 3 namespaces and at least the job", c)
	}
	if left := netnsListed(t, names...); len(left) != 0 {
		t.Errorf("%v still listed after Clean", left)
	}
}

// eventually polls cond until it holds or 5 s pass, and reports whether
// it held: a wait on a condition with a deadline, for states nothing
// signals (a process's namespace, goroutines ending).
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// waitUntil fails the test unless cond holds within 5 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !eventually(cond) {
		t.Fatalf("%s: not within 5 s", what)
	}
}

// gone reports whether process pid has ended (or become a zombie, dead
// but not yet reaped), waiting up to wait for it.
func gone(pid int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		// The state follows the command name's closing parenthesis.
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNoLeftovers(t *testing.T) {
	// Runs last in this file's order: every earlier pair has been closed
	// by its test's cleanup.
	labtest.Require(t)
	if left := ownNamespaces(t); len(left) != 0 {
		t.Errorf("namespaces left by this test binary: %v", left)
	}
}

// Close ends processes left running in the hosts (a lab shell's
// background jobs), rather than leaving them in namespaces nobody can name.
func TestCloseKillsLeftovers(t *testing.T) {
	labtest.Require(t)
	p, err := lab.NewPair(t.Context(), lab.PairConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := p.B.Command(context.Background(), "sleep", "60")
	if err := cmd.Start(); err != nil {
		p.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("a process in host B outlived the pair")
	}
}

// A host's MSS setting is what it advertises: the other side sends no
// larger segments, in both directions when both hosts set it.
func TestHostMSS(t *testing.T) {
	p := labtest.Pair(t, lab.PairConfig{A: lab.HostConfig{MSS: 536}, B: lab.HostConfig{MSS: 536}})
	ln, err := p.B.Listen(t.Context(), "tcp", net.JoinHostPort(p.B.Addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	c, err := p.A.Dial(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(make([]byte, 100_000)); err != nil {
		t.Fatal(err)
	}
	if mss := tcpInfo(t, c).Snd_mss; mss > 536 || mss < 400 {
		t.Fatalf("A sends %d-byte segments, want at most B's advertised 536", mss)
	}
}

// TestRouterMTU checks the router's per-direction MTU: R answers A's
// oversize segments with ICMP and A's path MTU drops to it, while B→A
// keeps the links' 1500; with BlackHole the answers never leave R and
// full-size segments never arrive.
func TestRouterMTU(t *testing.T) {
	const mtu, size = 1400, 1 << 20
	p := labtest.Pair(t, lab.PairConfig{AtoB: lab.Impairment{MTU: mtu}})
	got, _, c := transferFor(t, p, size, 5*time.Second)
	info := tcpInfo(t, c)
	t.Logf("A→B: %d of %d bytes, sender path MTU %d, mss %d", got, size, info.Pmtu, info.Snd_mss)
	if got != size || info.Pmtu != mtu {
		t.Errorf("A→B across a %d-byte route MTU: %d of %d bytes, path MTU %d", mtu, got, size, info.Pmtu)
	}
	if route := output(t, p.R, "ip", "route", "show", p.B.Prefix.Masked().String()); !strings.Contains(route, "mtu 1400") {
		t.Errorf("R's route toward B: %s", route)
	}
	if route := output(t, p.R, "ip", "route", "show", p.A.Prefix.Masked().String()); strings.Contains(route, "mtu") {
		t.Errorf("R's route toward A has an MTU: %s", route)
	}

	// Black hole: the same MTU, R's answers dropped.
	q := labtest.Pair(t, lab.PairConfig{AtoB: lab.Impairment{MTU: mtu, BlackHole: true}})
	got, _, c = transferFor(t, q, size, 2*time.Second)
	info = tcpInfo(t, c)
	t.Logf("black hole: %d bytes in 2 s, sender path MTU %d, %d retransmissions", got, info.Pmtu, info.Total_retrans)
	if got != 0 || info.Pmtu != 1500 || info.Total_retrans == 0 {
		t.Errorf("through a black hole: %d bytes arrived, path MTU %d, %d retransmissions", got, info.Pmtu, info.Total_retrans)
	}
	// Removing the MTU restores the route; the black hole goes with it.
	if err := q.SetImpairment(t.Context(), lab.AtoB, lab.Impairment{}); err != nil {
		t.Fatal(err)
	}
	if route := output(t, q.R, "ip", "route", "show", q.B.Prefix.Masked().String()); strings.Contains(route, "mtu") {
		t.Errorf("after SetImpairment(zero), R's route toward B: %s", route)
	}
	if tables := output(t, q.R, "nft", "list", "tables"); strings.Contains(tables, "mtu") {
		t.Errorf("after SetImpairment(zero), R's nft tables: %s", tables)
	}
}

// TestNetem runs where the kernel has sch_netem: a router pair whose
// delay is netem's, chosen by Auto for a path netem can carry.
func TestNetem(t *testing.T) {
	labtest.Require(t)
	if err := lab.HasNetem(t.Context()); err != nil {
		if errors.Is(err, lab.ErrNoNetem) {
			t.Skip("the kernel has no sch_netem: the netem backend is not tested here (the emulator carries every path)")
		}
		t.Fatal(err)
	}
	dir := emulator.Impairment{Delay: 10 * time.Millisecond, Rate: 50 * model.MbitPerSecond}
	p := labtest.Pair(t, lab.PairConfig{Emulated: &emulator.Config{AtoB: dir, BtoA: emulator.Impairment{Delay: 10 * time.Millisecond}}})
	if p.Backend() != lab.UseNetem || p.R == nil {
		t.Fatalf("Auto chose %v for a path netem can carry", p.Backend())
	}
	_, out := p.RouterLinks(lab.AtoB)
	if qd := output(t, p.R, "tc", "qdisc", "show", "dev", out); !strings.Contains(qd, "netem") || !strings.Contains(qd, "tbf") {
		t.Errorf("R's qdiscs toward B:\n%s", qd)
	}
	rtts := connectTimes(t, p, 11)
	slices.Sort(rtts)
	if med := rtts[len(rtts)/2]; med < 20*time.Millisecond || med > 21*time.Millisecond {
		t.Errorf("median connect time %v across netem's 2 × 10 ms", med)
	}
}

// TestBackendChoice: Auto falls back to the emulator where netem is
// missing or cannot carry the path; asking for netem without it fails.
func TestBackendChoice(t *testing.T) {
	labtest.Require(t)
	jittery := emulator.Config{AtoB: emulator.Impairment{Delay: time.Millisecond, Jitter: 100 * time.Microsecond}}
	p := labtest.Pair(t, lab.PairConfig{Emulated: &jittery})
	if p.Backend() != lab.UseEmulator || p.Emulator() == nil {
		t.Errorf("a jittered path: backend %v", p.Backend())
	}
	if lab.HasNetem(t.Context()) == nil {
		return
	}
	plain := emulator.Config{AtoB: emulator.Impairment{Delay: time.Millisecond}}
	q := labtest.Pair(t, lab.PairConfig{Emulated: &plain})
	if q.Backend() != lab.UseEmulator {
		t.Errorf("without netem, Auto chose %v", q.Backend())
	}
	ours := func() int {
		out, _ := exec.Command("ip", "netns", "list").Output()
		return strings.Count(string(out), fmt.Sprintf("%s%d-", lab.NamePrefix, os.Getpid()))
	}
	before := ours()
	_, err := lab.NewPair(t.Context(), lab.PairConfig{Emulated: &plain, Backend: lab.UseNetem})
	if !errors.Is(err, lab.ErrNoNetem) {
		t.Errorf("netem asked for without netem: %v", err)
	}
	_, err = lab.NewPair(t.Context(), lab.PairConfig{AtoB: lab.Impairment{Delay: time.Millisecond}})
	if !errors.Is(err, lab.ErrNoNetem) {
		t.Errorf("a router delay without netem: %v", err)
	}
	if after := ours(); after != before {
		t.Errorf("the failed NewPairs and netem probes left %d namespaces", after-before)
	}
}

// selfNetns is this process's network namespace as /proc names it.
func selfNetns(t *testing.T) string {
	l, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return l
}
