package emulator

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// ErrNotSupported: TUN devices are created on Linux only. The emulator
// itself runs anywhere over other Devices.
var ErrNotSupported = errors.New("emulator: TUN devices need Linux")

// Dir names one direction of a path: AtoB carries what host A (device a)
// sends to host B. Package lab's Dir is this type, so the router and the
// emulator name a direction alike. It is not model.Direction, which says
// which way a test stream's data flows (client to server or back).
type Dir int

// Directions: AtoB carries packets read from device a to device b.
const (
	AtoB Dir = iota
	BtoA
)

func (d Dir) String() string {
	switch d {
	case AtoB:
		return "A→B"
	case BtoA:
		return "B→A"
	}
	return fmt.Sprintf("Dir(%d)", int(d))
}

func (d Dir) valid() bool { return d == AtoB || d == BtoA }

// Config is the emulated path: one Impairment each way.
type Config struct {
	AtoB, BtoA Impairment
	// Seed seeds the random sources of both directions (each derives its
	// own stream from it); 0 picks a random seed.
	Seed uint64
}

// Impairment is what one direction of the path does to packets: its
// delay, rate, queue, losses, reordering, duplication and MTU. The zero
// value forwards every packet at once.
type Impairment struct {
	// Delay is the one-way propagation delay, added after the bottleneck.
	Delay time.Duration
	// Jitter is the standard deviation of a variation added to Delay per
	// packet, drawn from JitterDist; the delay never goes below 0 and
	// jitter never reorders (see the package doc).
	Jitter time.Duration
	// JitterDist is the shape of the jitter; the zero value is Normal.
	JitterDist Distribution
	// Rate is the bottleneck rate, counting whole IP packets; 0 means no
	// bottleneck.
	Rate model.Bitrate
	// Queue limits the bottleneck's drop-tail queue; the zero value means
	// DefaultQueue(Rate). Without a Rate there is no queue.
	Queue Queue
	// Police, when set, is a policer in front of the bottleneck: a token
	// bucket that drops what exceeds its rate instead of queueing it.
	Police *Policer
	// Loss is the probability that a packet is dropped at random.
	Loss float64
	// GE, when set, adds bursty Gilbert–Elliott loss.
	GE *GilbertElliott
	// Reorder is the probability that a packet overtakes the one ahead of
	// it in the delay line.
	Reorder float64
	// Duplicate is the probability that a packet is sent twice.
	Duplicate float64
	// MTU is the largest IP packet the direction carries; 0 means no
	// limit. Larger packets are answered with ICMP "too big" (IPv4 with
	// DF, IPv6) or dropped (IPv4 without DF, and everything with
	// BlackHole). Linux ignores an IPv6 Packet Too Big below 1280.
	MTU int
	// BlackHole drops oversize packets without an ICMP answer, as a path
	// whose routers' "too big" messages are filtered does. Needs MTU. A
	// Linux TCP sender stalls on it unless net.ipv4.tcp_mtu_probing is on;
	// with 1 it recovers after some retransmission timeouts (3 to 7 s at
	// a 200 ms RTO in trials).
	BlackHole bool
}

// Distribution is the shape of an Impairment's jitter. Every shape is
// scaled to mean 0 and standard deviation Impairment.Jitter, so switching
// shapes keeps the average delay and the spread and changes only how the
// spread is made.
type Distribution int

// Jitter distributions.
const (
	// Normal: the bell curve, truncated at ±3 SD (redrawn outside), which
	// leaves an SD of 0.987 Jitter.
	Normal Distribution = iota
	// Uniform: flat over ±√3 SD (netem's jitter without a table is flat
	// over ±jitter, which is √3 times less spread for the same number).
	Uniform
	// Pareto: heavy-tailed to the late side (shape α = 3, the one with
	// a finite variance), truncated at 20 times its minimum: most packets
	// arrive a little early, a few very late. The earliest is 0.64 SD
	// before Delay, the latest 23.7 SD after.
	Pareto
	// ParetoNormal: a quarter normal and three quarters Pareto, summed
	// and rescaled (the mix netem's paretonormal table is built from).
	ParetoNormal
)

var distNames = [...]string{Normal: "normal", Uniform: "uniform", Pareto: "pareto", ParetoNormal: "paretonormal"}

func (d Distribution) String() string {
	if d >= 0 && int(d) < len(distNames) {
		return distNames[d]
	}
	return fmt.Sprintf("Distribution(%d)", int(d))
}

// ParseDistribution reads a distribution's name as String writes it.
func ParseDistribution(s string) (Distribution, error) {
	for i, n := range distNames {
		if s == n {
			return Distribution(i), nil
		}
	}
	return 0, fmt.Errorf("jitter distribution %q: want normal, uniform, pareto or paretonormal", s)
}

// Queue is the limit of a bottleneck's drop-tail queue: the first non-zero
// field, in the order Packets, Bytes, Time, applies. A packet arriving at a
// full queue is dropped.
type Queue struct {
	// Packets is the most packets that may wait.
	Packets int
	// Bytes is the most bytes that may wait, the arriving packet included.
	Bytes model.Bytes
	// Time is the longest an arriving packet may have to wait before its
	// serialization starts.
	Time time.Duration
}

// IsZero reports whether q sets no limit (and so means the default).
func (q Queue) IsZero() bool { return q == Queue{} }

// Policer is a token-bucket rate limiter without a queue, as providers
// police a customer's traffic: a packet that finds fewer tokens than its
// size is dropped at once, never delayed, so the rate is held by loss
// while the round trip stays at its minimum. Tokens accrue at Rate
// (counting whole IP packets, as the bottleneck does) up to Burst bytes;
// the bucket starts full.
type Policer struct {
	Rate model.Bitrate
	// Burst is the bucket's size; 0 means DefaultBurst(Rate).
	Burst model.Bytes
}

// Policer defaults.
const (
	// DefaultBurstTime is the default bucket: this long at the rate.
	DefaultBurstTime = 10 * time.Millisecond
	// DefaultBurstMinPackets is the fewest full-size (1500-byte) packets
	// the default bucket holds.
	DefaultBurstMinPackets = 10
)

// DefaultBurst is the bucket of a policer at rate when Policer.Burst is
// zero: DefaultBurstTime of the rate, and at least DefaultBurstMinPackets
// packets of 1500 bytes.
func DefaultBurst(rate model.Bitrate) model.Bytes {
	b := model.Bytes(math.Ceil(rate.BytesPerSecond() * DefaultBurstTime.Seconds()))
	return max(b, DefaultBurstMinPackets*1500)
}

// burst is the bucket that applies.
func (p *Policer) burst() model.Bytes {
	if p.Burst > 0 {
		return p.Burst
	}
	return DefaultBurst(p.Rate)
}

// GilbertElliott is a two-state loss model, stepped once per packet.
type GilbertElliott struct {
	// P is the probability of going from the good state to the bad one,
	// R of going back.
	P, R float64
	// LossGood and LossBad are the loss probabilities in each state.
	LossGood, LossBad float64
}

// MeanLoss is the model's long-run loss probability:
// P/(P+R)·LossBad + R/(P+R)·LossGood. With P and R both 0 the chain stays
// in the good state.
func (g GilbertElliott) MeanLoss() float64 {
	if g.P+g.R == 0 {
		return g.LossGood
	}
	return g.P/(g.P+g.R)*g.LossBad + g.R/(g.P+g.R)*g.LossGood
}

// Queue defaults.
const (
	// DefaultQueueTime is the default queue: this long at the bottleneck
	// rate.
	DefaultQueueTime = 100 * time.Millisecond
	// DefaultQueueMinPackets is the fewest full-size (1500-byte) packets
	// the default queue holds, so slow bottlenecks still take a burst.
	DefaultQueueMinPackets = 10
)

// DefaultQueue is the queue of a bottleneck at rate when Impairment.Queue is
// zero: DefaultQueueTime of the rate in bytes, and at least
// DefaultQueueMinPackets packets of 1500 bytes.
func DefaultQueue(rate model.Bitrate) Queue {
	b := model.Bytes(math.Ceil(rate.BytesPerSecond() * DefaultQueueTime.Seconds()))
	return Queue{Bytes: max(b, DefaultQueueMinPackets*1500)}
}

// limit is the queue that applies: the first non-zero field of d.Queue
// alone, or the default; zero without a rate.
func (d Impairment) limit() Queue {
	q := d.Queue
	switch {
	case d.Rate == 0:
		return Queue{}
	case q.Packets > 0:
		return Queue{Packets: q.Packets}
	case q.Bytes > 0:
		return Queue{Bytes: q.Bytes}
	case q.Time > 0:
		return Queue{Time: q.Time}
	}
	return DefaultQueue(d.Rate)
}

// minRate is the slowest bottleneck accepted: below it one full-size packet
// takes longer than a second and a typo is the likelier explanation.
const minRate = 1 * model.KbitPerSecond

// Validate checks both directions.
func (c Config) Validate() error {
	if err := c.AtoB.validate(); err != nil {
		return fmt.Errorf("emulator: %s: %w", AtoB, err)
	}
	if err := c.BtoA.validate(); err != nil {
		return fmt.Errorf("emulator: %s: %w", BtoA, err)
	}
	return nil
}

func (d Impairment) validate() error {
	prob := func(name string, p float64) error {
		if math.IsNaN(p) || p < 0 || p > 1 {
			return fmt.Errorf("%s %v: want a probability from 0 to 1", name, p)
		}
		return nil
	}
	errs := []error{
		prob("loss", d.Loss),
		prob("reorder", d.Reorder),
		prob("duplicate", d.Duplicate),
	}
	if g := d.GE; g != nil {
		errs = append(errs, prob("GE P", g.P), prob("GE R", g.R),
			prob("GE LossGood", g.LossGood), prob("GE LossBad", g.LossBad))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r := float64(d.Rate)
	switch {
	case d.Delay < 0 || d.Jitter < 0:
		return fmt.Errorf("delay %v and jitter %v must not be negative", d.Delay, d.Jitter)
	case d.JitterDist < Normal || d.JitterDist > ParetoNormal:
		return fmt.Errorf("jitter distribution %v: want Normal, Uniform, Pareto or ParetoNormal", d.JitterDist)
	case math.IsNaN(r) || math.IsInf(r, 0) || r < 0:
		return fmt.Errorf("rate %v: want a finite rate ≥ 0", d.Rate)
	case r > 0 && d.Rate < minRate:
		return fmt.Errorf("rate %v: want at least %v", d.Rate, minRate)
	case d.Queue.Packets < 0 || d.Queue.Bytes < 0 || d.Queue.Time < 0:
		return fmt.Errorf("queue %+v: limits must not be negative", d.Queue)
	case d.MTU != 0 && (d.MTU < 68 || d.MTU > 65535):
		return fmt.Errorf("MTU %d: want 68 to 65535, or 0 for no limit", d.MTU)
	case d.BlackHole && d.MTU == 0:
		return errors.New("a black hole needs an MTU: it drops what exceeds it")
	}
	if p := d.Police; p != nil {
		pr := float64(p.Rate)
		switch {
		case math.IsNaN(pr) || math.IsInf(pr, 0) || p.Rate < minRate:
			return fmt.Errorf("policer rate %v: want a finite rate of at least %v", p.Rate, minRate)
		case p.Burst < 0 || (p.Burst > 0 && p.Burst < 1500):
			// A bucket smaller than a full-size packet drops every one.
			return fmt.Errorf("policer burst %v: want at least 1500 B, or 0 for the default", p.Burst)
		}
	}
	return nil
}
