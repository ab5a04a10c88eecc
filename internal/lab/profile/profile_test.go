package profile

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/model"
)

func TestBuiltin(t *testing.T) {
	s := builtinSet(t)
	paths, hosts := s.Names()
	for _, want := range []string{"lan-1g", "gigasunet-21ms", "vhp", "coast-to-coast", "transatlantic", "lossy-wan", "dsl"} {
		if _, err := s.Path(want); err != nil {
			t.Errorf("built-in path %s: %v (have %v)", want, err, paths)
		}
	}
	for _, want := range []string{"stock", "mistuned-2001", "tuned"} {
		if _, err := s.Host(want); err != nil {
			t.Errorf("built-in host %s: %v (have %v)", want, err, hosts)
		}
	}
	g, _ := s.Path("gigasunet-21ms")
	if g.Rate != model.GbitPerSecond || g.RTT != 21*time.Millisecond || g.RateBack != g.Rate {
		t.Fatalf("gigasunet-21ms = %+v", g)
	}
	// Tierney's worked example: 100 Mbit/s at 150 ms needs 1.9 MB.
	ta, _ := s.Path("transatlantic")
	if bdp := ta.BDP(); bdp.Decimal() != "1.88 MB" {
		t.Fatalf("transatlantic BDP %s, want 1.88 MB", bdp.Decimal())
	}
	m, _ := s.Host("mistuned-2001")
	if m.SACK == nil || *m.SACK || m.WindowScaling == nil || *m.WindowScaling || m.Rmem[2] != 65536 || m.MSS != 536 {
		t.Fatalf("mistuned-2001 = %+v", m)
	}
	st, _ := s.Host("stock")
	if st.SACK != nil || st.Rmem[2] != 0 {
		t.Fatalf("stock must leave the kernel alone: %+v", st)
	}
}

func TestTunedFollowsThePath(t *testing.T) {
	s := builtinSet(t)
	h, _ := s.Host("tuned")
	p, _ := s.Path("coast-to-coast") // 1 Gbit/s × 67 ms = 8.4 MB
	got := h.For(&p)
	if want := model.Bytes(2 * 1e9 / 8 * 0.067); got.Rmem[2] != want || got.Wmem[2] != want {
		t.Fatalf("tuned for coast-to-coast: rmem %v wmem %v, want %v", got.Rmem, got.Wmem, want)
	}
	lan, _ := s.Path("lan-1g")
	if got := h.For(&lan); got.Rmem[2] != 6*model.MiB {
		t.Fatalf("tuned never goes below the kernel's 6 MiB default: %v", got.Rmem)
	}
	m, _ := s.Host("mistuned-2001")
	if got := m.For(&p); got.Rmem != m.Rmem {
		t.Fatal("a fixed tuning must not follow the path")
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"[path.x]\nrate = \"1G\"\n":                                                 "rate and rtt are required",
		"[path.x]\nrate = \"fast\"\nrtt = \"1ms\"\n":                                "bad unit",
		"[path.x]\nrate = \"1G\"\nrtt = \"soon\"\n":                                 "rtt",
		"[path.x]\nrate = \"1G\"\nrtt = \"1ms\"\nloss = 2\n":                        "loss",
		"[path.x]\nrate = \"1G\"\nrtt = \"1ms\"\nlatency = \"1ms\"\n":               "unknown setting",
		"[host.h]\nrmem = \"1 2\"\n":                                                "three sizes",
		"[host.h]\nrmem = \"9 2 3\"\n":                                              "min ≤ default ≤ max",
		"[host.h]\nmss = 20\n":                                                      "mss",
		"[host.h]\nbuffers_bdp = 2.0\nrmem = \"1 2 3\"\n":                           "together",
		"not toml at all = = =":                                                     "profiles",
		"[path.x]\nrate = \"1G\"\nrtt = \"1ms\"\nqueue = \"lots\"\n":                "want a time (100ms), packets (64p) or a size",
		"[path.x]\nrate = \"1G\"\nrtt = \"1ms\"\nqueue = \"-3p\"\n":                 "positive whole number of packets",
		"[path.x]\nrate = \"1G\"\nrtt = \"1ms\"\njitter_distribution = \"gauss\"\n": "want normal, uniform",
		"[path.x]\nrate = \"1G\"\nrtt = \"1ms\"\nblack_hole = true\n":               "needs an mtu",
		"[path.x]\nrate = \"1G\"\nrtt = \"1ms\"\npolice_burst = \"64KiB\"\n":        "needs police",
		"[path.x]\nrate = \"1G\"\nrtt = \"1ms\"\npolice = \"500\"\n":                "policer rate",
		"[path.x]\nrate = \"1G\"\nrtt = \"1ms\"\nreorder = 1.5\n":                   "reorder 1.5",
		"[path.x]\nrate = \"1G\"\nrtt = \"1ms\"\n[path.x.burst_loss]\np = -1\n":     "GE P",
	}
	for in, want := range cases {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

func TestMergeOverrides(t *testing.T) {
	user, err := Parse([]byte("[path.vhp]\nrate = \"50M\"\nrtt = \"20ms\"\n[path.mine]\nrate = \"10M\"\nrtt = \"5ms\"\nrate_back = \"2M\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := builtinSet(t).Merge(user)
	v, _ := s.Path("vhp")
	mine, _ := s.Path("mine")
	if v.Rate != 50*model.MbitPerSecond || mine.RateBack != 2*model.MbitPerSecond {
		t.Fatalf("merge: vhp %v, mine %+v", v.Rate, mine)
	}
	if _, err := s.Path("nope"); err == nil || !strings.Contains(err.Error(), "known:") {
		t.Fatalf("unknown path error %v", err)
	}
	if _, err := builtinSet(t).Path("mine"); err == nil {
		t.Fatal("Merge changed the built-in set")
	}
}

func builtinSet(t *testing.T) Set {
	t.Helper()
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPathImpairments(t *testing.T) {
	s, err := Parse([]byte(`
[path.rough]
rate = "50M"
rtt = "30ms"
queue = "64p"
jitter = "2ms"
jitter_distribution = "pareto"
reorder = 0.01
duplicate = 0.001
mtu = 1400
black_hole = true
[path.rough.burst_loss]
p = 0.001
r = 0.3
loss_bad = 0.5

[path.bytes]
rate = "10M"
rtt = "10ms"
queue = "256KiB"

[path.timed]
rate = "10M"
rtt = "10ms"
queue = "50ms"

[path.policed]
rate = "0"
rtt = "40ms"
police = "10M"
police_burst = "64KiB"
`))
	if err != nil {
		t.Fatal(err)
	}
	d := s.Paths["rough"].Impairment(50 * model.MbitPerSecond)
	want := emulator.Impairment{Delay: 15 * time.Millisecond, Rate: 50 * model.MbitPerSecond,
		Queue: emulator.Queue{Packets: 64}, Jitter: 2 * time.Millisecond, JitterDist: emulator.Pareto,
		Reorder: 0.01, Duplicate: 0.001, MTU: 1400, BlackHole: true}
	if d.GE == nil || *d.GE != (emulator.GilbertElliott{P: 0.001, R: 0.3, LossBad: 0.5}) {
		t.Errorf("burst loss = %+v", d.GE)
	}
	d.GE = nil
	if d != want {
		t.Errorf("Impairment = %+v\nwant        %+v", d, want)
	}
	if d := s.Paths["policed"].Impairment(0); d.Police == nil || *d.Police != (emulator.Policer{Rate: 10 * model.MbitPerSecond, Burst: 64 * model.KiB}) {
		t.Errorf("policer = %+v", d.Police)
	}
	rough := s.Paths["rough"]
	if got, want := rough.MeanLoss(), rough.BurstLoss.MeanLoss(); math.Abs(got-want) > 1e-15 || want <= 0 {
		t.Errorf("MeanLoss = %v, want the burst model's %v", got, want)
	}
	rough.Loss = 0.01
	if got, want := rough.MeanLoss(), 1-0.99*(1-rough.BurstLoss.MeanLoss()); math.Abs(got-want) > 1e-15 {
		t.Errorf("MeanLoss with random loss too = %v, want %v", got, want)
	}
	if q := s.Paths["bytes"].Queue; q != (emulator.Queue{Bytes: 256 * model.KiB}) {
		t.Errorf("queue 256KiB = %+v", q)
	}
	if q := s.Paths["timed"].Queue; q != (emulator.Queue{Time: 50 * time.Millisecond}) {
		t.Errorf("queue 50ms = %+v", q)
	}
}
