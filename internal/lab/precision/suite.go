package precision

import (
	"time"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpmath"
)

// Scenario is one path, its hosts, one test across it, and what the
// verdict must say.
type Scenario struct {
	Name string
	// Loopback runs the test on 127.0.0.1 in this host, with no lab.
	Loopback bool
	// AtoB and BtoA are the path's two directions (A is the client).
	AtoB, BtoA emulator.Impairment
	Seed       uint64
	MTU        int // the hosts' links; 0: 1500
	A, B       lab.HostConfig
	Test       model.TestConfig
	// Healthy: the verdict must be the bottleneck (or healthy), with no
	// warning or critical finding anywhere, in every direction, but for
	// those Also lists (a test too short for the path: still-growing).
	Healthy bool
	// Want is the finding that must be in the verdict of the tested
	// direction (Dir); Also lists other findings that may stand in for it
	// (a wscale-off is an rwnd-limited, say).
	Want string
	Also []string
	// Beside: Want is a property worth knowing rather than a cost
	// (info severity), so it counts anywhere in the direction's
	// findings, not only in the verdict.
	Beside bool
	// Direction is the direction the cause is in: client→server unless the
	// test runs -R.
	Direction model.Direction
	// Known says why the diagnosis misses this scenario in some runs
	// today: CI reports such a miss without failing, every other miss
	// fails it, and docs/DIAGNOSES.md gives the measured hit rate.
	Known string
	// Backend carries the path: the emulator (the zero value, Auto, means
	// the emulator here) or the kernel's own tools (lab.UseKernel).
	Backend lab.Backend
	// Middlebox is what a box on the path does to the handshake (the
	// kernel backend's router only).
	Middlebox *lab.Middlebox
}

const (
	mbit = model.MbitPerSecond
	ms   = time.Millisecond
)

// tuned is a host tuned for a path: buffer maxima of twice its
// bandwidth-delay product (at least the kernel's 6 MiB default).
func tuned(rate model.Bitrate, rtt time.Duration) lab.HostConfig {
	bdp := model.Bytes(float64(rate) / 8 * rtt.Seconds())
	maxBuf := max(2*bdp, 6*model.MiB)
	return lab.HostConfig{
		Rmem: lab.BufferSizes{Min: model.LinuxRmem.Min, Default: model.LinuxRmem.Default, Max: maxBuf},
		Wmem: lab.BufferSizes{Min: model.LinuxWmem.Min, Default: model.LinuxWmem.Default, Max: maxBuf},
	}
}

// path is a symmetric path of rtt whose A→B direction has the
// bottleneck, with a drop-tail queue of one bandwidth-delay product
// (the classic sizing for one flow: full use without a standing queue of
// more than a round trip), at least 2 ms of the rate (a sender's TSO
// bursts are about 1 ms of it) and the emulator's smallest queue.
func path(rate model.Bitrate, rtt time.Duration) (emulator.Impairment, emulator.Impairment) {
	q := max(tcpmath.BDP(rate, rtt), tcpmath.BDP(rate, 2*ms), emulator.DefaultQueueMinPackets*1500)
	return emulator.Impairment{Delay: rtt / 2, Rate: rate, Queue: emulator.Queue{Bytes: q}}, emulator.Impairment{Delay: rtt / 2}
}

// healthy is a scenario of tuned hosts on a clean path, the test's
// congestion control cc (set on the sockets: a network namespace may
// not change the host's default to an algorithm it does not allow).
func healthy(name string, rate model.Bitrate, rtt time.Duration, cc string) Scenario {
	ab, ba := path(rate, rtt)
	h := tuned(rate, rtt)
	return Scenario{Name: name, AtoB: ab, BtoA: ba, A: h, B: h, Healthy: true, Direction: model.ClientToServer,
		Test: model.TestConfig{Congestion: cc}}
}

// healthyPaths are the false-alarm suite's paths, from a LAN to 150 ms
// and 10 Mbit/s to 1 Gbit/s, each with the congestion control CI runs it
// under (HealthyOnce); Healthy runs each under all three.
var healthyPaths = []struct {
	name string
	rate model.Bitrate
	rtt  time.Duration
	cc   string
}{
	{"LAN 1 Gbit/s, 0.2 ms", 1000 * mbit, 200 * time.Microsecond, "cubic"},
	{"10 Mbit/s, 20 ms", 10 * mbit, 20 * ms, "reno"},
	{"100 Mbit/s, 10 ms", 100 * mbit, 10 * ms, "bbr"},
	{"100 Mbit/s, 50 ms", 100 * mbit, 50 * ms, "cubic"},
	{"1 Gbit/s, 21 ms", 1000 * mbit, 21 * ms, "bbr"},
	{"20 Mbit/s, 100 ms", 20 * mbit, 100 * ms, "cubic"},
	{"50 Mbit/s, 150 ms", 50 * mbit, 150 * ms, "bbr"},
	{"300 Mbit/s, 40 ms", 300 * mbit, 40 * ms, "reno"},
	{"200 Mbit/s, 5 ms", 200 * mbit, 5 * ms, "cubic"},
}

// Healthy is the false-alarm suite: tuned hosts on clean paths, where
// the only limit is the path's rate, each path under bbr, cubic and
// reno, loopback, and an application's own rate limit.
func Healthy() []Scenario {
	var out []Scenario
	for _, p := range healthyPaths {
		for _, cc := range []string{"bbr", "cubic", "reno"} {
			out = append(out, healthy(p.name+", "+cc, p.rate, p.rtt, cc))
		}
	}
	return append(out, healthyExtra()...)
}

// HealthyOnce is the suite as CI runs it: each path once, under one
// congestion control (the three in turn across the paths).
func HealthyOnce() []Scenario {
	var out []Scenario
	for _, p := range healthyPaths {
		out = append(out, healthy(p.name+", "+p.cc, p.rate, p.rtt, p.cc))
	}
	return append(out, healthyExtra()...)
}

func healthyExtra() []Scenario {
	return []Scenario{
		{Name: "loopback", Loopback: true, Healthy: true, Direction: model.ClientToServer},
		// An application that asks for less than the path carries is
		// neither a fault nor the path: its own rate limit, named as such.
		withTest(healthy("-b 30M on 100 Mbit/s, 10 ms", 100*mbit, 10*ms, "cubic"),
			model.TestConfig{Bitrate: 30 * mbit}, "sender-app-limited"),
	}
}

// withTest gives a scenario its test settings, and a verdict to want
// instead of health.
func withTest(s Scenario, t model.TestConfig, want string) Scenario {
	if t.Congestion == "" {
		t.Congestion = s.Test.Congestion
	}
	s.Test = t
	if want != "" {
		s.Healthy, s.Want = false, want
	}
	if t.Reverse {
		s.Direction = model.ServerToClient
	}
	return s
}

// impaired is a scenario of tuned hosts on a path of rate and rtt, with
// its A→B direction changed by f, hosts by ha and hb, wanting want.
func impaired(name string, rate model.Bitrate, rtt time.Duration, cc string, want string, f func(ab *emulator.Impairment)) Scenario {
	s := healthy(name, rate, rtt, cc)
	s.Healthy, s.Want = false, want
	if f != nil {
		f(&s.AtoB)
	}
	return s
}

// reversed moves a scenario's A→B impairment to B→A and tests -R, so the
// cause sits in the server→client direction and at the other end.
func reversed(s Scenario) Scenario {
	s.Name += ", reversed (-R)"
	s.AtoB, s.BtoA = s.BtoA, s.AtoB
	s.A, s.B = s.B, s.A
	s.Test.Reverse = true
	s.Direction = model.ServerToClient
	return s
}

// Impairments is the hit-rate suite: variations of every cause in
// docs/DIAGNOSES.md.
func Impairments() []Scenario {
	small := func(max model.Bytes) lab.BufferSizes {
		return lab.BufferSizes{Min: 4096, Default: min(65536, max), Max: max}
	}
	withHost := func(s Scenario, a, b func(h *lab.HostConfig)) Scenario {
		if a != nil {
			a(&s.A)
		}
		if b != nil {
			b(&s.B)
		}
		return s
	}
	rwnd := func(name string, rate model.Bitrate, rtt time.Duration, cc string, buf model.Bytes) Scenario {
		return withHost(impaired(name, rate, rtt, cc, "rwnd-limited", nil), nil, func(h *lab.HostConfig) { h.Rmem = small(buf) })
	}
	sndbuf := func(name string, rate model.Bitrate, rtt time.Duration, buf model.Bytes) Scenario {
		return withHost(impaired(name, rate, rtt, "cubic", "sndbuf-limited", nil), func(h *lab.HostConfig) {
			h.Wmem = lab.BufferSizes{Min: model.LinuxWmem.Min, Default: min(model.LinuxWmem.Default, buf), Max: buf}
		}, nil)
	}
	loss := func(name string, rate model.Bitrate, rtt time.Duration, cc string, p float64, want string) Scenario {
		return impaired(name, rate, rtt, cc, want, func(ab *emulator.Impairment) { ab.Loss = p })
	}
	deepQueue := func(name string, rate model.Bitrate, rtt, q time.Duration) Scenario {
		return impaired(name, rate, rtt, "cubic", "bufferbloat", func(ab *emulator.Impairment) { ab.Queue = emulator.Queue{Time: q} })
	}
	off := func(name string, want string, set func(h *lab.HostConfig)) Scenario {
		return withHost(impaired(name, 50*mbit, 10*ms, "cubic", want, nil), set, set)
	}
	wscale := func(name string, rate model.Bitrate, rtt time.Duration) Scenario {
		s := withHost(impaired(name, rate, rtt, "cubic", "wscale-off", nil), nil, func(h *lab.HostConfig) { h.WindowScaling = lab.Off })
		s.Also = []string{"rwnd-limited"}
		return s
	}
	out := []Scenario{
		rwnd("128 KiB receive buffer, 100 Mbit/s, 20 ms", 100*mbit, 20*ms, "cubic", 128*model.KiB),
		rwnd("1 MiB receive buffer, 1 Gbit/s, 21 ms", 1000*mbit, 21*ms, "bbr", model.MiB),
		rwnd("160 KiB receive buffer, 100 Mbit/s, 60 ms, reno", 100*mbit, 60*ms, "reno", 160*model.KiB),
		reversed(rwnd("128 KiB receive buffer, 100 Mbit/s, 20 ms", 100*mbit, 20*ms, "cubic", 128*model.KiB)),
		wscale("window scaling off, 100 Mbit/s, 20 ms", 100*mbit, 20*ms),
		wscale("window scaling off, 50 Mbit/s, 60 ms", 50*mbit, 60*ms),
		sndbuf("64 KiB send buffer, 100 Mbit/s, 20 ms", 100*mbit, 20*ms, 64*model.KiB),
		sndbuf("128 KiB send buffer, 100 Mbit/s, 50 ms", 100*mbit, 50*ms, 128*model.KiB),
		reversed(sndbuf("64 KiB send buffer, 100 Mbit/s, 20 ms", 100*mbit, 20*ms, 64*model.KiB)),
		loss("0.3% loss, 100 Mbit/s, 60 ms, reno", 100*mbit, 60*ms, "reno", 0.003, "loss-limited"),
		loss("0.1% loss, 100 Mbit/s, 100 ms, cubic", 100*mbit, 100*ms, "cubic", 0.001, "loss-limited"),
		loss("1% loss, 50 Mbit/s, 20 ms, cubic", 50*mbit, 20*ms, "cubic", 0.01, "loss-limited"),
		reversed(loss("0.3% loss, 100 Mbit/s, 60 ms, reno", 100*mbit, 60*ms, "reno", 0.003, "loss-limited")),
		// Under BBR with its queue standing, random loss and BBR's own
		// overflow look alike from the sender: lossy-path is information
		// there, named among the findings.
		beside(loss("0.3% loss under bbr, 100 Mbit/s, 40 ms", 100*mbit, 40*ms, "bbr", 0.003, "lossy-path")),
		deepQueue("2 s queue, 8 Mbit/s, 20 ms", 8*mbit, 20*ms, 2*time.Second),
		deepQueue("400 ms queue, 20 Mbit/s, 10 ms", 20*mbit, 10*ms, 400*ms),
		off("SACK off", "sack-off", func(h *lab.HostConfig) { h.SACK = lab.Off }),
		beside(off("timestamps off", "timestamps-off", func(h *lab.HostConfig) { h.Timestamps = lab.Off })),
		withHost(impaired("536-byte MSS clamp, 50 Mbit/s, 10 ms", 50*mbit, 10*ms, "cubic", "small-mss", nil), nil,
			func(h *lab.HostConfig) { h.MSS = 536 }),
		// Reordering that RACK absorbs is a property of the path
		// (information), a cost only with retransmissions for nothing.
		beside(impaired("1% reordering, 50 Mbit/s, 10 ms", 50*mbit, 10*ms, "cubic", "reordering", func(ab *emulator.Impairment) { ab.Reorder = 0.01 })),
		beside(impaired("5% reordering, 50 Mbit/s, 10 ms", 50*mbit, 10*ms, "cubic", "reordering", func(ab *emulator.Impairment) { ab.Reorder = 0.05 })),
		withTest(impaired("reader at 20 Mbit/s, 100 Mbit/s, 20 ms", 100*mbit, 20*ms, "cubic", "", nil),
			model.TestConfig{ReadRate: 20 * mbit}, "slow-reader"),
		func() Scenario {
			// A reader that all but stops: the window closes (zero-window
			// beside the verdict), and the reader is the cause.
			s := withTest(impaired("stopped reader, 100 Mbit/s, 10 ms", 100*mbit, 10*ms, "cubic", "", nil),
				model.TestConfig{ReadRate: 200 * model.KbitPerSecond}, "slow-reader")
			s.Also = []string{"zero-window"}
			return s
		}(),
		// A rate limit that drops instead of queueing (a policer), told
		// apart from a queueing bottleneck, at two rates and under bbr.
		impaired("policer at 10 Mbit/s, 20 ms, cubic", 0, 20*ms, "cubic", "policer", func(ab *emulator.Impairment) {
			ab.Police = &emulator.Policer{Rate: 10 * mbit, Burst: model.MB}
		}),
		impaired("policer at 50 Mbit/s, 40 ms, cubic", 0, 40*ms, "cubic", "policer", func(ab *emulator.Impairment) {
			ab.Police = &emulator.Policer{Rate: 50 * mbit, Burst: 2 * model.MB}
		}),
		// The kernel's own policer (nftables' limit, whose bucket holds a
		// second of the rate) behind a faster bottleneck: slow start's
		// burst queues at the 300 Mbit/s link before the policer drops,
		// and the first rule read that queue as a bottleneck's.
		func() Scenario {
			s := impaired("nftables policer at 50 Mbit/s behind 300 Mbit/s, 40 ms, cubic (kernel)", 300*mbit, 40*ms, "cubic", "policer", func(ab *emulator.Impairment) {
				ab.Police = &emulator.Policer{Rate: 50 * mbit, Burst: 10_000}
			})
			s.Backend = lab.UseKernel
			return s
		}(),
		// The window and the loss bind together: both in the verdict.
		func() Scenario {
			s := withHost(impaired("256 KiB window and 0.05% loss, 60 ms, cubic", 0, 60*ms, "cubic", "rwnd-limited",
				func(ab *emulator.Impairment) { ab.Loss = 0.0005 }), nil, func(h *lab.HostConfig) { h.Rmem = small(256 * model.KiB) })
			s.Also, s.Seed = []string{"loss-limited"}, 5
			return s
		}(),
		impaired("MTU 1400 black hole, 50 Mbit/s, 10 ms", 50*mbit, 10*ms, "cubic", "pmtu-blackhole",
			func(ab *emulator.Impairment) { ab.MTU, ab.BlackHole = 1400, true }),
		func() Scenario {
			s := impaired("jumbo hosts behind a 1500-byte black hole, 100 Mbit/s, 10 ms", 100*mbit, 10*ms, "cubic", "pmtu-blackhole",
				func(ab *emulator.Impairment) { ab.MTU, ab.BlackHole = 1500, true })
			s.MTU = 9000
			return s
		}(),
		func() Scenario {
			s := reversed(impaired("jumbo hosts behind a 1500-byte black hole, 100 Mbit/s, 10 ms", 100*mbit, 10*ms, "cubic", "pmtu-blackhole",
				func(ab *emulator.Impairment) { ab.MTU, ab.BlackHole = 1500, true }))
			s.MTU = 9000
			return s
		}(),
		withTest(impaired("pacing at 10 Mbit/s, 100 Mbit/s, 20 ms", 100*mbit, 20*ms, "cubic", "", nil),
			model.TestConfig{FQRate: 10 * mbit}, "pacing-limited"),
		withTest(impaired("-b 20M, 100 Mbit/s, 20 ms", 100*mbit, 20*ms, "bbr", "", nil),
			model.TestConfig{Bitrate: 20 * mbit}, "sender-app-limited"),
		func() Scenario {
			// Bursts of 40 packets on average, all lost: longer than reno's
			// window, so only a timeout recovers.
			s := impaired("bursts of loss, 50 Mbit/s, 40 ms, reno", 50*mbit, 40*ms, "reno", "rto-stalls",
				func(ab *emulator.Impairment) {
					ab.GE = &emulator.GilbertElliott{P: 0.005, R: 0.025, LossBad: 1}
				})
			s.Seed = 11
			s.Also = []string{"loss-limited"}
			return s
		}(),
	}
	return out
}

// beside marks s's cause a property, found anywhere among the findings.
func beside(s Scenario) Scenario {
	s.Beside = true
	return s
}
