package lab

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/model"
)

func TestDefaultBurst(t *testing.T) {
	for _, tc := range []struct {
		rate model.Bitrate
		mtu  int
		want model.Bytes
	}{
		{100 * model.MbitPerSecond, 1500, 50_000},     // rate/HZ at HZ=250
		{1 * model.GbitPerSecond, 1500, 500_000},      // 4 ms of 125 MB/s
		{10 * model.MbitPerSecond, 1500, 8 * 1514},    // floor: eight frames
		{100 * model.MbitPerSecond, 9000, 8 * 9014},   // jumbo frames raise the floor
		{100 * model.MbitPerSecond, 0, 50_000},        // 0 means 1500
		{64 * model.KbitPerSecond, 1500, 8 * 1514},    // slow links keep the floor
		{2.5 * model.GbitPerSecond, 1500, 1_250_000},  // fractional Gbit/s
		{3 * model.MbitPerSecond / 7, 1500, 8 * 1514}, // non-integer rate
	} {
		if got := DefaultBurst(tc.rate, tc.mtu); got != tc.want {
			t.Errorf("DefaultBurst(%v, %d) = %d, want %d", tc.rate, tc.mtu, got, tc.want)
		}
	}
}

func TestPathResolveAndTBF(t *testing.T) {
	p, err := Impairment{Rate: 100 * model.MbitPerSecond}.resolve(1500)
	if err != nil {
		t.Fatal(err)
	}
	if p.Burst != 50_000 || p.Queue != DefaultQueue {
		t.Errorf("resolved %+v, want burst 50000 and queue %v", p, DefaultQueue)
	}
	// 50 ms of 12.5 MB/s plus the bucket.
	if got, want := p.limit(), model.Bytes(50_000+625_000); got != want {
		t.Errorf("limit = %d, want %d", got, want)
	}
	want := "qdisc replace dev veth-ab root tbf rate 100000000bit burst 50000 limit 675000"
	if got := strings.Join(p.tbfArgs("veth-ab"), " "); got != want {
		t.Errorf("tbf args:\n got %s\nwant %s", got, want)
	}

	p, err = Impairment{Rate: 10 * model.MbitPerSecond, Burst: 20_000, Queue: 10 * time.Millisecond}.resolve(1500)
	if err != nil {
		t.Fatal(err)
	}
	if p.Burst != 20_000 || p.limit() != 20_000+12_500 {
		t.Errorf("explicit burst/queue: %+v limit %d", p, p.limit())
	}

	// Without a rate, burst and queue are meaningless and dropped.
	p, err = Impairment{Burst: 1, Queue: time.Second, Loss: 0.5}.resolve(1500)
	if err != nil || p != (Impairment{Loss: 0.5}) {
		t.Errorf("loss-only path resolved to %+v, %v", p, err)
	}
}

func TestPathResolveRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Impairment
		want string
	}{
		{"negative rate", Impairment{Rate: -1}, "rate"},
		{"tiny rate", Impairment{Rate: 100}, "at least 8 kbit/s"},
		{"loss above 1", Impairment{Loss: 1.5}, "probability"},
		{"negative loss", Impairment{Loss: -0.1}, "probability"},
		{"loss below resolution", Impairment{Loss: 1e-12}, "resolution"},
		{"burst below a frame", Impairment{Rate: model.MbitPerSecond, Burst: 1000}, "smaller than one frame"},
		{"negative queue", Impairment{Rate: model.MbitPerSecond, Queue: -time.Second}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.p.resolve(1500)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("resolve(%+v) = %v, want an error containing %q", tc.p, err, tc.want)
			}
		})
	}
}

func TestPairConfigValidate(t *testing.T) {
	if err := (PairConfig{}).validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	if err := (PairConfig{MTU: 9000, Emulated: &emulator.Config{AtoB: emulator.Impairment{Delay: time.Millisecond}}}).validate(); err != nil {
		t.Errorf("emulated config: %v", err)
	}
	for _, tc := range []struct {
		cfg  PairConfig
		want string
	}{
		{PairConfig{MTU: 40}, "MTU 40"},
		{PairConfig{BtoA: Impairment{Loss: 2}}, "B→A"},
		{PairConfig{B: HostConfig{Rmem: BufferSizes{Min: 10, Default: 5, Max: 20}}}, "host B"},
		{PairConfig{A: HostConfig{Sysctls: map[string]string{"kernel.pid_max": "1"}}}, "only net.*"},
		{PairConfig{A: HostConfig{SACK: Toggle(9)}}, "bad toggle"},
		{PairConfig{Emulated: &emulator.Config{}, AtoB: Impairment{Loss: 0.1}}, "no router"},
		{PairConfig{Emulated: &emulator.Config{}, BtoA: Impairment{Queue: time.Second}}, "no router"},
		{PairConfig{Emulated: &emulator.Config{BtoA: emulator.Impairment{MTU: 20}}}, "B→A: MTU 20"},
	} {
		if err := tc.cfg.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("validate(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

func TestHostConfigSysctls(t *testing.T) {
	h := HostConfig{
		SACK:              Off,
		Timestamps:        On,
		Rmem:              BufferSizes{4096, 87380, 6 * model.MiB},
		CongestionControl: "cubic",
		RmemMax:           model.MiB, // host-wide: not in the list
		Sysctls:           map[string]string{"net.ipv4.tcp_ecn": "1", "net/ipv4/tcp_no_metrics_save": "1"},
	}
	got, err := h.sysctls()
	if err != nil {
		t.Fatal(err)
	}
	want := []sysctl{
		{"net.ipv4.tcp_sack", "0"},
		{"net.ipv4.tcp_timestamps", "1"},
		{"net.ipv4.tcp_rmem", "4096 87380 6291456"},
		{"net.ipv4.tcp_congestion_control", "cubic"},
		{"net.ipv4.tcp_ecn", "1"},
		{"net/ipv4/tcp_no_metrics_save", "1"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("sysctls:\n got %v\nwant %v", got, want)
	}
}

func TestSysctlPath(t *testing.T) {
	for key, want := range map[string]string{
		"net.ipv4.tcp_sack":         "/proc/sys/net/ipv4/tcp_sack",
		"net/ipv4/conf/eth0.5/mtu":  "/proc/sys/net/ipv4/conf/eth0.5/mtu",
		"/net/core/somaxconn":       "/proc/sys/net/core/somaxconn",
		"kernel.pid_max":            "",
		"net/../kernel/pid_max":     "",
		"vm.swappiness":             "",
		"net.":                      "",
		"netfoo.bar":                "",
		"net.ipv4.conf.all.forward": "/proc/sys/net/ipv4/conf/all/forward",
	} {
		got, err := sysctlPath(key)
		if want == "" {
			if err == nil {
				t.Errorf("sysctlPath(%q) = %q, want an error", key, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("sysctlPath(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
}

func TestLossScript(t *testing.T) {
	s := lossScript(nftTable(BtoA), "veth-rb", 0.01)
	for _, want := range []string{
		"table netdev tcpscope_btoa {}\ndelete table netdev tcpscope_btoa\n",
		`type filter hook ingress device "veth-rb" priority 0;`,
		"meta protocol { ip, ip6 } numgen random mod 1000000000 < 10000000 counter drop",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("loss script lacks %q:\n%s", want, s)
		}
	}
	if nftTable(AtoB) == nftTable(BtoA) {
		t.Errorf("both directions' loss rules share table %s in the router", nftTable(AtoB))
	}
	if s := lossScript(nftTable(AtoB), "veth-ra", 0); strings.Contains(s, "numgen") || !strings.Contains(s, "delete table") {
		t.Errorf("zero loss should only remove the table:\n%s", s)
	}
	if got := lossThreshold(1); got != lossScale {
		t.Errorf("lossThreshold(1) = %d, want %d (drop everything)", got, lossScale)
	}
	// numgen cannot express "< 10^9": a black hole drops without it.
	if s := lossScript(nftTable(AtoB), "veth-ra", 1); strings.Contains(s, "numgen") || !strings.Contains(s, "counter drop") {
		t.Errorf("loss 1 must drop everything:\n%s", s)
	}
}

func TestNftDropped(t *testing.T) {
	// Recorded from nft 1.0.6 (`nft -j list table netdev tcpscope`).
	out := `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}, {"table": {"family": "netdev", "name": "tcpscope", "handle": 1}}, {"chain": {"family": "netdev", "table": "tcpscope", "name": "loss", "handle": 1, "type": "filter", "hook": "ingress", "prio": 0, "policy": "accept"}}, {"rule": {"family": "netdev", "table": "tcpscope", "chain": "loss", "handle": 3, "comment": "tcpscope lab: random loss 0.01", "expr": [{"match": {"op": "==", "left": {"meta": {"key": "protocol"}}, "right": {"set": ["ip", "ip6"]}}}, {"match": {"op": "<", "left": {"numgen": {"mode": "random", "mod": 1000000000, "offset": 0}}, "right": 10000000}}, {"counter": {"packets": 214, "bytes": 321000}}, {"drop": null}]}}]}`
	n, err := nftDropped(out)
	if err != nil || n != 214 {
		t.Errorf("nftDropped = %d, %v; want 214", n, err)
	}
	if _, err := nftDropped(`{"nftables": [{"table": {"family": "netdev", "name": "tcpscope"}}]}`); err == nil {
		t.Error("a table without a counter should be an error")
	}
	if _, err := nftDropped("not json"); err == nil {
		t.Error("garbage should be an error")
	}
}

func TestNames(t *testing.T) {
	a, b, r := nsNames(4242, 7)
	if a != "tcpscope-4242-7-a" || b != "tcpscope-4242-7-b" || r != "tcpscope-4242-7-r" {
		t.Errorf("nsNames = %q, %q, %q", a, b, r)
	}
	for name, want := range map[string]int{
		"tcpscope-4242-7-a": 4242,
		"tcpscope-1-1-b":    1,
		"tcpscope-9-3-r":    9,
		"tcpscope-x-1-a":    0,
		"tcpscope-42":       0,
		"other-4242-7-a":    0,
		"tcpscope--1-a":     0,
		"tcpscope-0-1-a":    0,
	} {
		pid, ok := creatorPID(name)
		if ok != (want != 0) || pid != want {
			t.Errorf("creatorPID(%q) = %d, %v; want %d", name, pid, ok, want)
		}
	}
	got := parseNetnsList("tcpscope-1-2-b (id: 1)\ntcpscope-1-2-a (id: 0)\n\nplain\n")
	if !slices.Equal(got, []string{"tcpscope-1-2-b", "tcpscope-1-2-a", "plain"}) {
		t.Errorf("parseNetnsList = %q", got)
	}
}

func TestLinkPrefixes(t *testing.T) {
	seen := map[string]bool{}
	for seq := uint32(1); seq <= 20; seq++ {
		a, b := linkPrefixes(1234, seq)
		for _, p := range []netip.Prefix{a, b} {
			if !p.IsValid() || p.Bits() != 24 || p.Addr().As4()[2] == 0 || p.Addr().As4()[3] != 0 {
				t.Fatalf("linkPrefixes(1234, %d) = %v, %v", seq, a, b)
			}
		}
		if !strings.HasPrefix(a.String(), "10.199.") || !strings.HasPrefix(b.String(), "10.200.") || a.Overlaps(b) {
			t.Fatalf("linkPrefixes(1234, %d) = %v, %v: want 10.199.N.0/24 and 10.200.N.0/24", seq, a, b)
		}
		seen[a.String()] = true
	}
	if len(seen) != 20 {
		t.Errorf("20 pairs of one process got %d distinct subnets", len(seen))
	}
	a, _ := linkPrefixes(1, 1)
	if h, r := hostAddr(a), routerAddr(a); !a.Contains(h) || !a.Contains(r) || h.As4()[3] != 1 || r.As4()[3] != 254 {
		t.Errorf("in %v: host %v, router %v; want .1 and .254", a, h, r)
	}
}

func TestSentinels(t *testing.T) {
	// labtest prints ErrPermission's text as the skip message.
	if !strings.Contains(ErrPermission.Error(), "run as root or in CI") {
		t.Errorf("ErrPermission = %q", ErrPermission)
	}
}
