package lab_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
)

// kernelPath is a pair carried by the kernel backend: the emulator for
// the delay, the router's tc and nftables for the rest.
func kernelPath(cfg emulator.Config) lab.PairConfig {
	return lab.PairConfig{Emulated: &cfg, Backend: lab.UseKernel}
}

// TestKernelPair checks the kernel backend's topology and its physics:
// A's TUN to the emulator, R between the emulator and B, the delay the
// emulator's (a connect takes the round trip) and the bottleneck R's,
// in both shapers: 50 Mbit/s of frames through tbf or htb carry 1448 of
// every 1514 bytes as payload, within the scheduling noise TestThroughput
// allows.
func TestKernelPair(t *testing.T) {
	labtest.Require(t)
	for _, htb := range []bool{false, true} {
		name := "tbf"
		if htb {
			name = "htb"
		}
		t.Run(name, func(t *testing.T) {
			const rate = 50 * model.MbitPerSecond
			p := labtest.Pair(t, kernelPath(emulator.Config{
				AtoB: emulator.Impairment{Delay: 5 * time.Millisecond, Rate: rate},
				BtoA: emulator.Impairment{Delay: 5 * time.Millisecond},
			}))
			if p.R == nil || p.Emulator() == nil || p.Backend() != lab.UseKernel {
				t.Fatalf("R %v, emulator %v, backend %v: want both, kernel", p.R, p.Emulator(), p.Backend())
			}
			if htb {
				imp := p.Impairment(lab.AtoB)
				imp.HTB = true
				if err := p.SetImpairment(t.Context(), lab.AtoB, imp); err != nil {
					t.Fatal(err)
				}
			}
			in, out := p.RouterLinks(lab.AtoB)
			qdiscs := output(t, p.R, "tc", "qdisc", "show", "dev", out)
			if want := map[bool]string{false: "tbf", true: "bfifo"}[htb]; !strings.Contains(qdiscs, "qdisc "+want) {
				t.Errorf("R's %s (in by %s) has qdiscs:\n%s", out, in, qdiscs)
			}
			if times := connectTimes(t, p, 5); times[0] < 10*time.Millisecond || times[0] > 15*time.Millisecond {
				t.Errorf("connects took %v, want the 10 ms round trip", times)
			}
			n, elapsed, info := transfer(t, p.A, p.B, 3*time.Second)
			got := model.RateOf(model.Bytes(n), elapsed.Seconds())
			t.Logf("%s in %v: %v, %d retransmitted", model.Bytes(n), elapsed.Round(time.Millisecond), got, info.Total_retrans)
			if got < 42*model.MbitPerSecond || got > 50.5*model.MbitPerSecond {
				t.Errorf("goodput %v over a 50 Mbit/s %s, want 42 to 50.5 Mbit/s", got, name)
			}
		})
	}
}

// TestKernelPolicer: nftables' token bucket in R holds a transfer to the
// policed rate by dropping, with no queue: what arrives is at most the
// bucket (the burst and, nftables' own, a second of the rate) and the
// rate over the transfer, the sender retransmits, and the round trip
// stays at the delay's.
func TestKernelPolicer(t *testing.T) {
	const policed, burst = 20 * model.MbitPerSecond, 30_000
	p := labtest.Pair(t, kernelPath(emulator.Config{
		AtoB: emulator.Impairment{Delay: 5 * time.Millisecond, Police: &emulator.Policer{Rate: policed, Burst: burst}},
		BtoA: emulator.Impairment{Delay: 5 * time.Millisecond},
	}))
	n, elapsed, info := transfer(t, p.A, p.B, 3*time.Second)
	got := model.RateOf(model.Bytes(n), elapsed.Seconds())
	t.Logf("%s in %v: %v, %d retransmitted, srtt %v", model.Bytes(n), elapsed.Round(time.Millisecond), got, info.Total_retrans, time.Duration(info.Rtt)*time.Microsecond)
	// The first byte's timestamp starts the clock a round trip after
	// the bucket began filling: 10 ms of the rate more at most.
	most := policed.BytesPerSecond()*(elapsed+time.Second+10*time.Millisecond).Seconds() + burst
	if float64(n) > most || got < policed/2 {
		t.Errorf("%d bytes (%v) through a %v policer in %v: want at most %.0f, and at least half its rate", n, got, policed, elapsed, most)
	}
	if info.Total_retrans == 0 {
		t.Error("no retransmission through a policer the sender exceeds")
	}
	if rtt := time.Duration(info.Rtt) * time.Microsecond; rtt > 14*time.Millisecond {
		t.Errorf("smoothed RTT %v through a policer on a 10 ms path: a queue stood", rtt)
	}
	if ruleset := output(t, p.R, "nft", "list", "ruleset"); !strings.Contains(ruleset, "limit rate over 2500000 bytes/second burst 30000 bytes") {
		t.Errorf("R's ruleset:\n%s", ruleset)
	}
}

// TestKernelLossAndMiddlebox: nftables' random loss in R is loss to TCP
// and counted, and the middlebox's MSS clamp and SACK stripping reach
// the handshake: the sender's MSS is the clamp's, less the timestamps'
// 12 bytes, and SACK is not negotiated.
func TestKernelLossAndMiddlebox(t *testing.T) {
	cfg := kernelPath(emulator.Config{
		AtoB: emulator.Impairment{Delay: 2 * time.Millisecond, Rate: 50 * model.MbitPerSecond, Loss: 0.01},
		BtoA: emulator.Impairment{Delay: 2 * time.Millisecond},
	})
	cfg.Middlebox = &lab.Middlebox{ClampMSS: 1000, StripSACK: true}
	p := labtest.Pair(t, cfg)
	_, _, info := transfer(t, p.A, p.B, 2*time.Second)
	dropped, err := p.Dropped(t.Context(), lab.AtoB)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mss %d, options %#x, %d retransmitted, %d dropped", info.Snd_mss, info.Options, info.Total_retrans, dropped)
	if dropped == 0 || info.Total_retrans == 0 {
		t.Errorf("%d dropped, %d retransmitted: want both", dropped, info.Total_retrans)
	}
	if info.Snd_mss != 1000-12 && info.Snd_mss != 1000 {
		t.Errorf("sender's MSS %d behind a 1000-byte clamp", info.Snd_mss)
	}
	const optSACK = 2 // TCPI_OPT_SACK
	if info.Options&optSACK != 0 {
		t.Errorf("SACK negotiated through a middlebox that strips it (options %#x)", info.Options)
	}
}

// TestKernelRefuses: what only netem or the emulator does is refused by
// the kernel backend before anything is built, and so is a middlebox
// without a router.
func TestKernelRefuses(t *testing.T) {
	for _, imp := range []emulator.Impairment{
		{Jitter: time.Millisecond},
		{Reorder: 0.01},
		{Duplicate: 0.01},
		{GE: &emulator.GilbertElliott{P: 0.01, R: 0.5, LossBad: 1}},
	} {
		if _, _, _, err := lab.KernelImpairments(emulator.Config{AtoB: imp}, 0); err == nil {
			t.Errorf("%+v: accepted", imp)
		}
	}
	cfg := lab.PairConfig{Emulated: &emulator.Config{}, Backend: lab.UseEmulator, Middlebox: &lab.Middlebox{ClampMSS: 536}}
	if _, err := lab.NewPair(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "middlebox") {
		t.Errorf("a middlebox on the emulator alone: %v", err)
	}
}
