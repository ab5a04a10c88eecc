package lab

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/model"
)

// Backend is what carries an emulated path (PairConfig.Emulated).
type Backend int

// Backends. Auto uses kernel netem when the kernel has it and netem can
// reproduce the path as the emulator defines it, and the emulator
// otherwise.
const (
	Auto Backend = iota
	// UseEmulator: the userspace emulator over TUN devices.
	UseEmulator
	// UseNetem: the router R with kernel qdiscs, netem for delay, tbf for
	// the bottleneck (see RouterImpairments).
	UseNetem
	// UseKernel: the router R with the kernel's own tools for everything
	// but the delay: tbf or htb for the bottleneck and its queue, nftables
	// for random loss, a policer and a path MTU's black hole; the emulator
	// carries only the delay, between A and R (see KernelImpairments). A
	// second implementation of the same path, so that no diagnosis leans
	// on an artefact of the emulator's.
	UseKernel
)

var backendNames = [...]string{Auto: "auto", UseEmulator: "emulator", UseNetem: "netem", UseKernel: "kernel"}

func (b Backend) String() string {
	if b >= 0 && int(b) < len(backendNames) {
		return backendNames[b]
	}
	return fmt.Sprintf("Backend(%d)", int(b))
}

// ParseBackend reads a backend's name as String writes it.
func ParseBackend(s string) (Backend, error) {
	for i, n := range backendNames {
		if s == n {
			return Backend(i), nil
		}
	}
	return 0, fmt.Errorf("backend %q: want auto, emulator, netem or kernel", s)
}

// ErrNoNetem: the kernel has no sch_netem.
var ErrNoNetem = errors.New("lab: this kernel has no netem qdisc (sch_netem)")

// netemLimit is netem's own queue, in packets: it holds every packet in
// the delay line, so it must exceed the most a path ever has in flight
// (1 Gbit/s × 150 ms is 12,500 full-size packets, and their ACKs). The
// bottleneck's drop-tail queue is tbf's limit, not this.
const netemLimit = 1_000_000

// RouterImpairments translates an emulator configuration into the router's
// impairment of each direction, for the netem backend, or says why netem cannot
// reproduce it as the emulator defines it:
//   - jitter: netem sorts jittered packets by their send time, so they
//     overtake each other, where the emulator's jitter never reorders;
//   - reordering: netem sends a reordered packet at once, without its
//     delay, where the emulator's keeps its delay and overtakes one packet;
//   - a Seed: netem's randomness cannot be seeded;
//   - a policer: tbf queues what exceeds its rate, a policer drops it.
//
// The rest maps one to one, in this order in R: random loss (nftables, on
// arrival), then netem (Gilbert–Elliott loss, duplication, delay), then
// tbf (the bottleneck and its drop-tail queue). The emulator delays after
// the bottleneck; for one bottleneck the sum is the same. tbf counts
// Ethernet frames where the emulator counts IP packets, so the tbf rate is
// raised by (MTU+14)/MTU: full-size packets then cross at exactly the
// emulator's rate (small ones, ACKs, slightly slower). The queue becomes
// bytes (packets × MTU, or time × rate).
func RouterImpairments(c emulator.Config, mtu int) (atob, btoa Impairment, err error) {
	if err := c.Validate(); err != nil {
		return Impairment{}, Impairment{}, fmt.Errorf("lab: %w", err)
	}
	if c.Seed != 0 {
		return Impairment{}, Impairment{}, errors.New("lab: netem cannot seed its randomness; use the emulator for a repeatable path")
	}
	if mtu == 0 {
		mtu = defaultMTU
	}
	conv := func(name emulator.Dir, d emulator.Impairment) (Impairment, error) {
		switch {
		case d.Jitter > 0:
			return Impairment{}, fmt.Errorf("lab: %s: netem reorders jittered packets; the emulator's jitter keeps their order", name)
		case d.Reorder > 0:
			return Impairment{}, fmt.Errorf("lab: %s: netem's reordering skips the delay; the emulator's keeps it", name)
		case d.Police != nil:
			return Impairment{}, fmt.Errorf("lab: %s: the router has no policer (tbf queues what the emulator's policer drops)", name)
		}
		p := Impairment{Loss: d.Loss, Delay: d.Delay, Duplicate: d.Duplicate, MTU: d.MTU, BlackHole: d.BlackHole}
		if d.GE != nil {
			ge := *d.GE
			p.GE = &ge
		}
		if d.Rate > 0 {
			frame := float64(mtu+ethHeader) / float64(mtu)
			p.Rate = model.Bitrate(float64(d.Rate) * frame)
			p.Queue = time.Duration(float64(queueBytes(d, mtu)) / p.Rate.BytesPerSecond() * float64(time.Second))
		}
		return p, nil
	}
	if atob, err = conv(emulator.AtoB, c.AtoB); err != nil {
		return Impairment{}, Impairment{}, err
	}
	if btoa, err = conv(emulator.BtoA, c.BtoA); err != nil {
		return Impairment{}, Impairment{}, err
	}
	return atob, btoa, nil
}

// KernelImpairments translates an emulator configuration for the kernel
// backend: the delay stays with the emulator (returned as a configuration
// with nothing else), and the router carries the rest with the kernel's
// own tools, in this order in R: the policer and random loss (nftables,
// on arrival), then the bottleneck (tbf, or htb over a bfifo with
// Impairment.HTB set by the caller) on the link toward the receiver, and
// the MTU as R's route MTU. What only the emulator or netem does is
// refused: jitter, reordering, duplication and bursty loss.
//
// The bottleneck's rate is corrected as RouterImpairments does for the
// link it sits on: A→B leaves R by a veth, whose qdisc counts the
// 14-byte Ethernet header of each frame; B→A leaves by R's TUN device,
// which has none, so its rate is the emulator's as it stands.
func KernelImpairments(c emulator.Config, mtu int) (atob, btoa Impairment, delay emulator.Config, err error) {
	if err := c.Validate(); err != nil {
		return Impairment{}, Impairment{}, emulator.Config{}, fmt.Errorf("lab: %w", err)
	}
	if mtu == 0 {
		mtu = defaultMTU
	}
	conv := func(name emulator.Dir, d emulator.Impairment, frame float64) (Impairment, error) {
		switch {
		case d.Jitter > 0:
			return Impairment{}, fmt.Errorf("lab: %s: the kernel backend has no jitter (it needs netem); use the emulator", name)
		case d.Reorder > 0:
			return Impairment{}, fmt.Errorf("lab: %s: the kernel backend has no reordering (it needs netem); use the emulator", name)
		case d.Duplicate > 0:
			return Impairment{}, fmt.Errorf("lab: %s: the kernel backend has no duplication (it needs netem); use the emulator", name)
		case d.GE != nil:
			return Impairment{}, fmt.Errorf("lab: %s: the kernel backend has no bursty loss (it needs netem); use the emulator", name)
		}
		p := Impairment{Loss: d.Loss, MTU: d.MTU, BlackHole: d.BlackHole}
		if d.Police != nil {
			pol := *d.Police
			if pol.Burst == 0 {
				pol.Burst = emulator.DefaultBurst(pol.Rate)
			}
			p.Police = &pol
		}
		if d.Rate > 0 {
			// tbf's queue holds its bucket and the rate's worth of its
			// latency: the latency is what is left of the emulator's
			// queue once the bucket is counted, so the two queue the
			// same bytes (a 9.81 Mbit/s path's 15 ms queue, with the
			// 8-frame bucket on top, held 25 ms: bufferbloat).
			p.Rate = model.Bitrate(float64(d.Rate) * frame)
			p.Burst = DefaultBurst(p.Rate, mtu)
			left := max(queueBytes(d, mtu)-p.Burst, model.Bytes(mtu+ethHeader))
			p.Queue = time.Duration(float64(left) / p.Rate.BytesPerSecond() * float64(time.Second))
		}
		return p, nil
	}
	veth := float64(mtu+ethHeader) / float64(mtu)
	if atob, err = conv(emulator.AtoB, c.AtoB, veth); err != nil {
		return Impairment{}, Impairment{}, emulator.Config{}, err
	}
	if btoa, err = conv(emulator.BtoA, c.BtoA, 1); err != nil {
		return Impairment{}, Impairment{}, emulator.Config{}, err
	}
	delay = emulator.Config{AtoB: emulator.Impairment{Delay: c.AtoB.Delay}, BtoA: emulator.Impairment{Delay: c.BtoA.Delay}, Seed: c.Seed}
	return atob, btoa, delay, nil
}

// queueBytes is the emulator's queue limit of d in bytes (packets of the
// MTU, or time at its rate).
func queueBytes(d emulator.Impairment, mtu int) model.Bytes {
	switch q := d.Queue; {
	case q.Packets > 0:
		return model.Bytes(q.Packets * mtu)
	case q.Bytes > 0:
		return q.Bytes
	case q.Time > 0:
		return model.Bytes(d.Rate.BytesPerSecond() * q.Time.Seconds())
	}
	return emulator.DefaultQueue(d.Rate).Bytes
}

// policeScript is the nft script that makes link's ingress drop what
// exceeds pol's token bucket (nftables' limit, counting IP packets'
// bytes), replacing any earlier rule in table; with pol nil it only
// removes the table.
func policeScript(table, link string, pol *emulator.Policer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table netdev %s {}\ndelete table netdev %s\n", table, table)
	if pol == nil {
		return b.String()
	}
	fmt.Fprintf(&b, "table netdev %s {\n\tchain police {\n", table)
	fmt.Fprintf(&b, "\t\ttype filter hook ingress device %q priority -10; policy accept;\n", link)
	fmt.Fprintf(&b, "\t\tmeta protocol { ip, ip6 } limit rate over %d bytes/second burst %d bytes counter drop comment %q\n",
		int64(math.Round(pol.Rate.BytesPerSecond())), int64(pol.Burst), fmt.Sprintf("tcpscope lab: policer %v", pol.Rate))
	b.WriteString("\t}\n}\n")
	return b.String()
}

// policeTable is the nftables table holding direction d's policer.
func policeTable(d Dir) string { return dirTable("police_", d) }

// Middlebox is what a box on the path does to the TCP handshake in both
// directions: clamp the MSS a SYN offers, or strip options from it so
// they are never negotiated (RFC 7323's window scaling and timestamps,
// RFC 2018's SACK). R does it with nftables in its forward chain; it
// needs a router (UseNetem, UseKernel, or a pair without Emulated).
type Middlebox struct {
	// ClampMSS lowers the MSS option of every SYN to at most this; 0
	// leaves it.
	ClampMSS int
	// StripSACK, StripTimestamps and StripWindowScale remove the option
	// from every SYN.
	StripSACK, StripTimestamps, StripWindowScale bool
}

// IsZero reports whether m does nothing.
func (m Middlebox) IsZero() bool { return m == Middlebox{} }

func (m Middlebox) validate() error {
	if m.ClampMSS != 0 && (m.ClampMSS < 88 || m.ClampMSS > 65535) {
		return fmt.Errorf("lab: middlebox MSS clamp %d: want 88 to 65535 (0 for none)", m.ClampMSS)
	}
	return nil
}

// middleboxTable is the nftables table in R holding the middlebox.
const middleboxTable = "tcpscope_middlebox"

// middleboxScript is the nft script that installs m in R's forward
// chain, replacing any earlier one.
func middleboxScript(m Middlebox) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {}\ndelete table inet %s\n", middleboxTable, middleboxTable)
	if m.IsZero() {
		return b.String()
	}
	fmt.Fprintf(&b, "table inet %s {\n\tchain forward {\n", middleboxTable)
	b.WriteString("\t\ttype filter hook forward priority mangle; policy accept;\n")
	if m.ClampMSS > 0 {
		fmt.Fprintf(&b, "\t\ttcp flags syn tcp option maxseg size > %d tcp option maxseg size set %d counter comment \"tcpscope lab: MSS clamp\"\n", m.ClampMSS, m.ClampMSS)
	}
	for _, o := range []struct {
		on   bool
		name string
	}{{m.StripSACK, "sack-perm"}, {m.StripTimestamps, "timestamp"}, {m.StripWindowScale, "window"}} {
		if o.on {
			fmt.Fprintf(&b, "\t\ttcp flags syn reset tcp option %s counter comment \"tcpscope lab: strip %s\"\n", o.name, o.name)
		}
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// needsNetem reports whether p has impairments only netem provides.
func (p Impairment) needsNetem() bool { return p.Delay > 0 || p.Duplicate > 0 || p.GE != nil }

// netemArgs is the tc command (after "tc -n NS") that installs p's netem
// as link's root qdisc, handle 1:, under which tbfArgs then hangs the
// bottleneck. netem takes percentages; six decimals keep 1e-8.
func (p Impairment) netemArgs(link string) []string {
	pct := func(f float64) string { return strconv.FormatFloat(100*f, 'f', -1, 64) + "%" }
	args := []string{"qdisc", "replace", "dev", link, "root", "handle", "1:", "netem",
		"limit", strconv.Itoa(netemLimit)}
	if p.Delay > 0 {
		args = append(args, "delay", strconv.FormatInt(p.Delay.Microseconds(), 10)+"us")
	}
	if g := p.GE; g != nil {
		// netem's gemodel takes p, r, 1-h and 1-k: 1-h is the loss in the
		// bad state, 1-k in the good one.
		args = append(args, "loss", "gemodel", pct(g.P), pct(g.R), pct(g.LossBad), pct(g.LossGood))
	}
	if p.Duplicate > 0 {
		args = append(args, "duplicate", pct(p.Duplicate))
	}
	return args
}

// blackHoleScript is the nft script that makes R drop its own "too big"
// answers (ICMP fragmentation needed, ICMPv6 packet too big) leaving by
// link, toward the sender of direction d's packets, replacing any earlier
// rule; with on false it only removes the table.
func blackHoleScript(table, link string, on bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {}\ndelete table inet %s\n", table, table)
	if !on {
		return b.String()
	}
	fmt.Fprintf(&b, "table inet %s {\n\tchain out {\n", table)
	b.WriteString("\t\ttype filter hook output priority 0; policy accept;\n")
	fmt.Fprintf(&b, "\t\toifname %q icmp type destination-unreachable icmp code frag-needed counter drop\n", link)
	fmt.Fprintf(&b, "\t\toifname %q icmpv6 type packet-too-big counter drop\n", link)
	b.WriteString("\t}\n}\n")
	return b.String()
}

// mtuTable is the nftables table holding direction d's black hole.
func mtuTable(d Dir) string { return dirTable("mtu_", d) }

// dirTable names an nftables table of R's that holds one direction's
// rule of a kind: both directions' tables live in R, each its own.
func dirTable(kind string, d Dir) string {
	if d == BtoA {
		return "tcpscope_" + kind + "btoa"
	}
	return "tcpscope_" + kind + "atob"
}

// validGE checks a Gilbert–Elliott model's probabilities.
func validGE(g *emulator.GilbertElliott) error {
	if g == nil {
		return nil
	}
	for _, v := range []float64{g.P, g.R, g.LossGood, g.LossBad} {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return fmt.Errorf("burst loss %+v: want probabilities from 0 to 1", *g)
		}
	}
	return nil
}
