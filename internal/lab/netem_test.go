package lab

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/model"
)

func TestRouterImpairments(t *testing.T) {
	ge := &emulator.GilbertElliott{P: 0.01, R: 0.5, LossBad: 0.3}
	cfg := emulator.Config{
		AtoB: emulator.Impairment{Delay: 10 * time.Millisecond, Rate: 100 * model.MbitPerSecond, Loss: 0.001,
			GE: ge, Duplicate: 0.002, MTU: 1400, BlackHole: true, Queue: emulator.Queue{Packets: 100}},
		BtoA: emulator.Impairment{Delay: 10 * time.Millisecond},
	}
	atob, btoa, err := RouterImpairments(cfg, 1500)
	if err != nil {
		t.Fatal(err)
	}
	// tbf counts 1514-byte frames: the rate rises by 1514/1500 so that
	// full-size IP packets cross at 100 Mbit/s.
	wantRate := model.Bitrate(100e6 * 1514.0 / 1500)
	if math.Abs(float64(atob.Rate-wantRate)) > 1e-3 {
		t.Errorf("rate %v, want %v", atob.Rate, wantRate)
	}
	// 100 packets of 1500 bytes at the tbf's rate.
	if q := atob.Queue; (q - time.Duration(150_000*8/float64(wantRate)*1e9)).Abs() > time.Microsecond {
		t.Errorf("queue %v, want 100 × 1500 bytes at %v", q, wantRate)
	}
	if atob.Delay != 10*time.Millisecond || atob.Loss != 0.001 || atob.Duplicate != 0.002 ||
		atob.MTU != 1400 || !atob.BlackHole || atob.GE == nil || *atob.GE != *ge || atob.GE == ge {
		t.Errorf("A→B = %+v", atob)
	}
	if btoa.Delay != 10*time.Millisecond || btoa.Rate != 0 || !btoa.needsNetem() {
		t.Errorf("B→A = %+v", btoa)
	}
	// The default queue is the emulator's: 100 ms of the rate.
	d, _, err := RouterImpairments(emulator.Config{AtoB: emulator.Impairment{Rate: 10 * model.MbitPerSecond}}, 9000)
	if err != nil {
		t.Fatal(err)
	}
	if got := model.Bytes(d.Rate.BytesPerSecond() * d.Queue.Seconds()); got < 124_999 || got > 125_001 {
		t.Errorf("default queue holds %d bytes, want 125,000", got)
	}

	for _, bad := range []struct {
		cfg  emulator.Config
		want string
	}{
		{emulator.Config{AtoB: emulator.Impairment{Delay: time.Millisecond, Jitter: time.Millisecond}}, "jitter"},
		{emulator.Config{BtoA: emulator.Impairment{Delay: time.Millisecond, Reorder: 0.1}}, "reordering"},
		{emulator.Config{Seed: 7}, "seed"},
		{emulator.Config{AtoB: emulator.Impairment{Police: &emulator.Policer{Rate: model.MbitPerSecond}}}, "policer"},
		{emulator.Config{AtoB: emulator.Impairment{Loss: 2}}, "probability"},
	} {
		if _, _, err := RouterImpairments(bad.cfg, 1500); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("RouterImpairments(%+v) = %v, want an error about %s", bad.cfg, err, bad.want)
		}
	}
}

func TestNetemArgs(t *testing.T) {
	p := Impairment{Delay: 10500 * time.Microsecond, Duplicate: 0.001,
		GE: &emulator.GilbertElliott{P: 0.01, R: 0.25, LossBad: 0.5, LossGood: 0.0001}}
	got := strings.Join(p.netemArgs("veth-rb"), " ")
	want := "qdisc replace dev veth-rb root handle 1: netem limit 1000000 delay 10500us " +
		"loss gemodel 1% 25% 50% 0.01% duplicate 0.1%"
	if got != want {
		t.Errorf("netem args\n got %s\nwant %s", got, want)
	}
	if !p.needsNetem() || (Impairment{Rate: 1e6, MTU: 1400}).needsNetem() {
		t.Error("needsNetem: delay, duplicate and GE need netem; rate and MTU do not")
	}
}

func TestBlackHoleScript(t *testing.T) {
	on := blackHoleScript("tcpscope_mtu_atob", "veth-ra", true)
	for _, want := range []string{"hook output", `oifname "veth-ra" icmp type destination-unreachable icmp code frag-needed`, "icmpv6 type packet-too-big"} {
		if !strings.Contains(on, want) {
			t.Errorf("script lacks %q:\n%s", want, on)
		}
	}
	off := blackHoleScript("tcpscope_mtu_atob", "veth-ra", false)
	if strings.Contains(off, "drop") || !strings.Contains(off, "delete table inet tcpscope_mtu_atob") {
		t.Errorf("removal script:\n%s", off)
	}
}

func TestParseBackend(t *testing.T) {
	for _, b := range []Backend{Auto, UseEmulator, UseNetem} {
		if got, err := ParseBackend(b.String()); err != nil || got != b {
			t.Errorf("ParseBackend(%q) = %v, %v", b, got, err)
		}
	}
	if _, err := ParseBackend("tc"); err == nil {
		t.Error("ParseBackend(tc): no error")
	}
	if err := (PairConfig{Backend: 7}).validate(); err == nil {
		t.Error("validate accepted backend 7")
	}
	cfg := PairConfig{Backend: UseNetem, Emulated: &emulator.Config{AtoB: emulator.Impairment{Jitter: time.Millisecond}}}
	if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "jitter") {
		t.Errorf("netem with jitter: %v", err)
	}
	if !slices.Contains([]string{"auto", "emulator", "netem"}, Backend(0).String()) {
		t.Error("the zero Backend has no name")
	}
}

// TestKernelImpairments: the kernel backend's router queues what the
// emulator's queue holds (tbf's limit, its bucket included, is the
// emulator's queue in bytes, to a frame), corrects A→B's rate for the
// veth's Ethernet headers and not B→A's (R's TUN has none), carries the
// policer and loss, and leaves the emulator only the delay.
func TestKernelImpairments(t *testing.T) {
	c := emulator.Config{
		AtoB: emulator.Impairment{Delay: 5 * time.Millisecond, Rate: 9810 * model.KbitPerSecond, Queue: emulator.Queue{Bytes: 18_394}, Loss: 0.01,
			Police: &emulator.Policer{Rate: 5 * model.MbitPerSecond}},
		BtoA: emulator.Impairment{Delay: 5 * time.Millisecond, Rate: 100 * model.MbitPerSecond, Queue: emulator.Queue{Time: 10 * time.Millisecond}},
		Seed: 7,
	}
	ab, ba, delay, err := KernelImpairments(c, 1500)
	if err != nil {
		t.Fatal(err)
	}
	if got := ab.limit(); got < 18_394 || got > 18_394+1514 {
		t.Errorf("A→B tbf limit %d (bucket %d), want the emulator's 18394 B", got, ab.Burst)
	}
	if want := 125_000; ba.limit() < model.Bytes(want) || ba.limit() > model.Bytes(want+1514) {
		t.Errorf("B→A tbf limit %d, want 10 ms of 100 Mbit/s, 125000 B", ba.limit())
	}
	if r := float64(ab.Rate) / float64(9810*model.KbitPerSecond); math.Abs(r-1514.0/1500) > 1e-9 {
		t.Errorf("A→B rate ×%.6f, want the frame factor", r)
	}
	if ba.Rate != 100*model.MbitPerSecond {
		t.Errorf("B→A rate %v, want 100 Mbit/s as it stands", ba.Rate)
	}
	if ab.Loss != 0.01 || ab.Police == nil || ab.Police.Burst == 0 {
		t.Errorf("A→B loss %v, policer %+v", ab.Loss, ab.Police)
	}
	if delay.AtoB != (emulator.Impairment{Delay: 5 * time.Millisecond}) || delay.BtoA != (emulator.Impairment{Delay: 5 * time.Millisecond}) || delay.Seed != 7 {
		t.Errorf("the emulator's share %+v, want the delays alone", delay)
	}
}
