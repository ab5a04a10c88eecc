package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/model"
)

// NamePrefix starts the name of every namespace the lab creates. The full
// name is NamePrefix + "<pid>-<seq>-a" (or "-b" for host B, "-r" for the
// router), where pid is the creating process, so Clean can tell leftovers
// of dead processes from live pairs.
const NamePrefix = "tcpscope-"

// Errors a caller may want to tell apart. Command failures are wrapped with
// the command line and its stderr.
var (
	// ErrNotSupported: the lab needs Linux network namespaces.
	ErrNotSupported = errors.New("lab: network namespaces need Linux")
	// ErrPermission: the process may not create namespaces or links.
	ErrPermission = errors.New("lab: needs root (CAP_NET_ADMIN) to create network namespaces; run as root or in CI")
	// ErrMissingTool: ip, tc or nft is not installed.
	ErrMissingTool = errors.New("lab: tool not found")
	// ErrHostWide: the setting exists once per machine, not per namespace,
	// and differs from what was asked. The lab refuses rather than change
	// the host under everything else running on it.
	ErrHostWide = errors.New("lab: setting is host-wide, not per network namespace")
)

// Defaults for a Path's tbf.
const (
	// DefaultQueue is how long a packet may wait in a rate limiter's queue
	// when Impairment.Queue is zero: a moderately buffered bottleneck. In trials
	// one flow at 100 Mbit/s (625 kB of queue) never filled it; at 10
	// Mbit/s (62.5 kB) BBR's probing overflowed it now and then, as it
	// would a shallow bottleneck in a real network.
	DefaultQueue = 50 * time.Millisecond

	// burstTime sizes the default token bucket: rate × 4 ms, which is
	// rate/HZ for HZ=250 (the kernels we run). tc-tbf(8) asks for at
	// least rate/HZ. tbf's watchdog is an hrtimer now, so this is less
	// strict than it was, but in a trial at 1 Gbit/s a 1 ms bucket lost 3%
	// of goodput to CUBIC and 4 ms lost none.
	burstTime = 4 * time.Millisecond

	// burstFrames is the smallest default bucket in full frames, so that
	// low rates still pass back-to-back segments without stalling.
	burstFrames = 8

	// ethHeader is the Ethernet header tbf counts in each frame's length.
	ethHeader = 14

	// defaultMTU is the kernel's default MTU for a veth.
	defaultMTU = 1500

	// lossScale is the numgen modulus: loss probabilities have a
	// resolution of 1e-9.
	lossScale = 1_000_000_000
)

// PairConfig describes a pair of hosts and the path between them. The zero
// value is an unimpaired path of 1500-byte links between two hosts with
// kernel default settings, through a router.
type PairConfig struct {
	// MTU of every veth end (both links, all four ends); 0 keeps the
	// kernel default of 1500.
	MTU int
	// Offload keeps TSO/GSO on the veths, so TCP hands them up to 64 KiB
	// aggregates, which the router forwards whole: much faster, but Loss
	// then drops whole aggregates and the tbf meters them in bursts. Off
	// (the default), every packet on a link is at most MTU bytes, as on a
	// wire.
	Offload bool
	// AtoB and BtoA are the impairments of each direction, in the
	// router. They must be zero when Emulated is set.
	AtoB, BtoA Impairment
	// A and B are the hosts' settings.
	A, B HostConfig
	// Emulated, when set, joins A and B through the userspace path
	// emulator instead of the router: a TUN device in each host (named
	// tun-a and tun-b, MTU as above) and the emulator, running in the
	// calling process, between them with this configuration. There is no
	// router namespace then (Pair.R is nil); the emulator's MTU, rate,
	// queue, loss, delay and jitter are the path. Offload does not apply:
	// the TUN devices always take the kernel's aggregates and the emulator
	// splits them, so every impairment acts per packet. Nil (the default)
	// builds the router.
	Emulated *emulator.Config
	// Backend chooses what carries Emulated: the emulator, kernel netem in
	// a router (RouterImpairments), or (Auto, the zero value) netem when the
	// kernel has it and it can reproduce the path, the emulator
	// otherwise. Pair.Backend reports the choice.
	Backend Backend
	// Middlebox, when set, is what R does to every TCP handshake it
	// forwards (an MSS clamp, options stripped). It needs a router.
	Middlebox *Middlebox
}

// Impairment is what the router does to the packets of one direction of
// the path: rate, queue, loss and MTU (and, with kernel netem, delay,
// duplication and bursty loss).
type Impairment struct {
	// Rate limits the direction with a token bucket (tbf) on the router's
	// link toward the receiver; 0 means unlimited. Its queue is the
	// path's bottleneck buffer, in R and not in the sending host. tbf counts whole frames (IP packet plus a
	// 14-byte Ethernet header), so TCP goodput over a 1500-byte MTU with
	// timestamps is at most Rate × 1448/1514, about 95.6% of Rate.
	Rate model.Bitrate
	// Burst is the token bucket size; 0 picks DefaultBurst(Rate, MTU).
	Burst model.Bytes
	// Queue is the longest a packet may wait in the rate limiter's queue
	// (tbf's latency); 0 means DefaultQueue. The queue holds
	// Burst + Rate × Queue bytes; a full queue drops.
	Queue time.Duration
	// Loss is the probability that a packet of this direction is dropped,
	// from 0 to 1, with a resolution of 1e-9. Each IPv4 and IPv6 packet is
	// dropped independently on arrival at the router from the sender,
	// before the rate limiter; ARP and neighbour discovery are spared so
	// that loss never stalls address resolution.
	Loss float64
	// MTU is the largest IP packet R forwards in this direction (a route
	// MTU in R for the receiver's subnet); 0: the links' MTU. As a real
	// router does, R answers a larger packet that has DF set with ICMP
	// "fragmentation needed" carrying the MTU.
	MTU int
	// BlackHole makes R drop those answers instead: a path-MTU black
	// hole. Needs MTU.
	BlackHole bool

	// Delay, Duplicate and GE need kernel netem (sch_netem) in R, which
	// then sits in front of the tbf: the one-way delay of the direction,
	// the probability that a packet is sent twice, and bursty
	// (Gilbert–Elliott) loss. NewPair and SetImpairment fail with ErrNoNetem
	// where the kernel lacks it.
	Delay     time.Duration
	Duplicate float64
	GE        *emulator.GilbertElliott

	// Police, when set, drops what exceeds its token bucket on arrival at
	// R (nftables' limit), before the rate limiter: a policer. nftables'
	// byte limit holds a second of its rate in the bucket beyond the burst
	// (the kernel's tokens_max is unit × (rate + burst) / rate, and its
	// smallest unit is a second), so this policer's bucket is Burst plus a
	// second of Rate: a large bucket, as many providers' are. Small
	// buckets are the emulator's.
	Police *emulator.Policer
	// HTB shapes the rate with htb and a byte-limited drop-tail queue
	// (bfifo) of Rate × Queue instead of tbf.
	HTB bool
}

// IsZero reports whether p leaves the direction unimpaired.
func (p Impairment) IsZero() bool {
	return p.Rate == 0 && p.Loss == 0 && p.MTU == 0 && p.Police == nil && !p.needsNetem()
}

// DefaultBurst is the token bucket used for rate when Impairment.Burst is zero:
// rate × 4 ms (rate/HZ at HZ=250), and at least eight full frames.
func DefaultBurst(rate model.Bitrate, mtu int) model.Bytes {
	if mtu <= 0 {
		mtu = defaultMTU
	}
	b := model.Bytes(math.Ceil(rate.BytesPerSecond() * burstTime.Seconds()))
	return max(b, model.Bytes(burstFrames*(mtu+ethHeader)))
}

// Toggle is an on/off sysctl that may also be left alone.
type Toggle int8

// Toggle values. Unset (the zero value) keeps the kernel's default.
const (
	Unset Toggle = iota
	On
	Off
)

func (t Toggle) String() string {
	switch t {
	case On:
		return "on"
	case Off:
		return "off"
	}
	return "unset"
}

// BufferSizes is a min, default and max triple as in net.ipv4.tcp_rmem. The
// zero value leaves the sysctl alone.
type BufferSizes struct {
	Min, Default, Max model.Bytes
}

// IsZero reports whether b is unset.
func (b BufferSizes) IsZero() bool { return b == BufferSizes{} }

// String formats b as the sysctl expects it: "4096 131072 6291456".
func (b BufferSizes) String() string {
	return fmt.Sprintf("%d %d %d", b.Min, b.Default, b.Max)
}

// HostConfig holds one host's TCP settings. Zero fields keep the defaults
// a new network namespace gets from the kernel.
type HostConfig struct {
	// SACK, Timestamps and WindowScaling set net.ipv4.tcp_sack,
	// tcp_timestamps and tcp_window_scaling.
	SACK, Timestamps, WindowScaling Toggle
	// Rmem and Wmem set net.ipv4.tcp_rmem and tcp_wmem, the bounds of
	// receive and send buffer autotuning. All three sizes must be set.
	Rmem, Wmem BufferSizes
	// CongestionControl sets net.ipv4.tcp_congestion_control, e.g.
	// "cubic". A new namespace inherits the host's choice at creation.
	CongestionControl string
	// MSS, when set, is the segment size the host advertises to the other
	// (the advmss of its route to it), as a 2001 host's small MSS: the
	// peer then sends segments no larger. 0 leaves it to the MTU.
	MSS int
	// RmemMax and WmemMax are net.core.rmem_max and wmem_max, the caps on
	// SO_RCVBUF/SO_SNDBUF (autotuning ignores them). The kernel has one
	// value for the whole machine: NewPair succeeds only when the host's
	// value already equals the one asked, and otherwise fails with
	// ErrHostWide instead of changing the host. Set it on the host first,
	// or use Rmem/Wmem, which are per host.
	RmemMax, WmemMax model.Bytes
	// Sysctls sets any other net.* sysctl, after the fields above, in key
	// order. Keys use dots ("net.ipv4.tcp_ecn") or slashes.
	Sysctls map[string]string
}

// Dir names one direction of a pair's path, A→B or B→A: the emulator's
// own type, so the router and the emulator speak of a direction alike.
type Dir = emulator.Dir

// Directions.
const (
	AtoB = emulator.AtoB
	BtoA = emulator.BtoA
)

// Pair is two hosts, A and B, joined through a router, R: A —veth— R
// —veth— B; or, with PairConfig.Emulated, through the userspace emulator:
// A —TUN— emulator —TUN— B; or, with the kernel backend, through the
// emulator (the delay) and the router (the rest): A —TUN— emulator —TUN—
// R —veth— B. A Pair must be closed.
type Pair struct {
	// A and B are the end hosts; each dials the other's Addr.
	A, B *Host
	// R is the router, where the impairments of both directions sit. Its
	// Link, Addr and Prefix describe its side toward A (Addr is A's
	// gateway); RouterLinks names both of its links. Use it to inspect or
	// add to the path with tc or nft (R.Command) without touching the
	// hosts. It is nil when the emulator carries the whole path (its
	// link toward A is then R's TUN device with the kernel backend).
	R *Host

	cfg    PairConfig
	rlinks [2]string // R's link toward A, toward B

	mu          sync.Mutex
	impairments [2]Impairment // as applied, defaults resolved
	backend     Backend       // what carries the path: UseEmulator, UseNetem or UseKernel; Auto for a plain router
	shaped      [2]bool       // a qdisc (tbf, or netem with tbf) is installed for the direction
	netem       [2]bool       // that qdisc is netem's
	mtu         [2]bool       // a route MTU is set for the direction
	holed       [2]bool       // an nft black-hole table is installed for the direction
	lossy       [2]bool       // an nft loss table is installed for the direction
	policed     [2]bool       // an nft policer table is installed for the direction
	closed      bool
	created     []string // namespaces to delete, in creation order

	emu  *emulator.Emulator // the running emulator of an emulated pair
	tuns []emulator.Device  // TUN devices not yet handed to the emulator
}

// Host is one of a Pair's network namespaces: an end host with loopback
// and one veth link to the router, or the router itself.
type Host struct {
	// Name is the network namespace, as `ip netns list` shows it.
	Name string
	// Link is the name of the host's veth end inside its namespace (for
	// the router: its link toward A).
	Link string
	// Addr is the host's address on Link, inside Prefix; for A and B, the
	// address the other host dials.
	Addr netip.Addr
	// Prefix is Link's subnet. A and B are on different subnets and reach
	// each other through R.
	Prefix netip.Prefix
}

// Config returns the configuration the pair was created with; Path reports
// the current impairment of each direction.
func (p *Pair) Config() PairConfig { return p.cfg }

// Backend reports what carries the path: UseEmulator (the emulator over
// TUN), UseNetem (netem in the router), UseKernel (the router's tc and
// nftables, the emulator delaying) or, for a pair built from AtoB and
// BtoA alone, Auto.
func (p *Pair) Backend() Backend { return p.backend }

// Emulator returns the emulator of an emulated pair, for its counters
// (with the kernel backend it only delays, between A and R); nil when a
// router alone carries the path.
func (p *Pair) Emulator() *emulator.Emulator { return p.emu }

// Impairment returns the impairment currently applied to direction d, with
// defaults resolved (a rate-limited Impairment has its Burst and Queue filled in).
func (p *Pair) Impairment(d Dir) Impairment {
	if !validDir(d) {
		return Impairment{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.impairments[d]
}

func validDir(d Dir) bool { return d == AtoB || d == BtoA }

// RouterLinks returns the names of R's links that direction d enters and
// leaves the router by: d's loss rule sits on the ingress of in, its rate
// limiter (tbf) on the egress of out. For AtoB, in faces A and out faces B.
// An emulated pair has no router links: both names are empty.
func (p *Pair) RouterLinks(d Dir) (in, out string) {
	if d == BtoA {
		return p.rlinks[1], p.rlinks[0]
	}
	return p.rlinks[0], p.rlinks[1]
}

func (c PairConfig) mtu() int {
	if c.MTU == 0 {
		return defaultMTU
	}
	return c.MTU
}

// validate checks the configuration before anything is created, so a bad
// value costs no namespace churn.
func (c PairConfig) validate() error {
	if c.MTU != 0 && (c.MTU < 68 || c.MTU > 65535) {
		return fmt.Errorf("lab: MTU %d: want 68 to 65535 (0 for the default 1500)", c.MTU)
	}
	for _, h := range []HostConfig{c.A, c.B} {
		if h.MSS != 0 && (h.MSS < 88 || h.MSS > 65535) {
			return fmt.Errorf("lab: MSS %d: want 88 to 65535 (0 for the MTU's)", h.MSS)
		}
	}
	if c.Backend < Auto || c.Backend > UseKernel {
		return fmt.Errorf("lab: backend %v: want Auto, UseEmulator, UseNetem or UseKernel", c.Backend)
	}
	if c.Backend == UseKernel && c.Emulated == nil {
		return errors.New("lab: the kernel backend carries an emulated path: set Emulated")
	}
	if c.Middlebox != nil {
		if err := c.Middlebox.validate(); err != nil {
			return err
		}
		if c.Emulated != nil && c.Backend != UseKernel && c.Backend != UseNetem {
			return errors.New("lab: a middlebox needs a router: the kernel or netem backend, or a path without Emulated")
		}
	}
	if c.Emulated != nil {
		if c.AtoB != (Impairment{}) || c.BtoA != (Impairment{}) {
			return errors.New("lab: an emulated path has no router: set rate and loss in the emulator's configuration, not in AtoB and BtoA")
		}
		if err := c.Emulated.Validate(); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		if c.Backend == UseNetem {
			if _, _, err := RouterImpairments(*c.Emulated, c.MTU); err != nil {
				return err
			}
		}
		if c.Backend == UseKernel {
			if _, _, _, err := KernelImpairments(*c.Emulated, c.MTU); err != nil {
				return err
			}
		}
	}
	for _, d := range []Dir{AtoB, BtoA} {
		p := c.AtoB
		if d == BtoA {
			p = c.BtoA
		}
		if _, err := p.resolve(c.mtu()); err != nil {
			return fmt.Errorf("lab: %s: %w", d, err)
		}
	}
	for _, h := range []struct {
		name string
		cfg  HostConfig
	}{{"A", c.A}, {"B", c.B}} {
		if _, err := h.cfg.sysctls(); err != nil {
			return fmt.Errorf("lab: host %s: %w", h.name, err)
		}
	}
	return nil
}

// resolve checks p and fills in the defaults of a rate-limited path.
func (p Impairment) resolve(mtu int) (Impairment, error) {
	switch {
	case math.IsNaN(float64(p.Rate)) || p.Rate < 0 || math.IsInf(float64(p.Rate), 0):
		return p, fmt.Errorf("rate %v: want a finite rate ≥ 0", p.Rate)
	case p.Rate > 0 && p.Rate < 8*model.KbitPerSecond:
		// tc's rate tables work in bytes per second; below 1 kB/s the
		// rounding error is large and a 1500-byte frame takes seconds.
		return p, fmt.Errorf("rate %v: want at least 8 kbit/s", p.Rate)
	case math.IsNaN(p.Loss) || p.Loss < 0 || p.Loss > 1:
		return p, fmt.Errorf("loss %v: want a probability from 0 to 1", p.Loss)
	case p.Loss > 0 && lossThreshold(p.Loss) == 0:
		return p, fmt.Errorf("loss %v: below the resolution of 1e-9", p.Loss)
	case p.Burst < 0 || p.Queue < 0:
		return p, fmt.Errorf("burst %d and queue %v must not be negative", p.Burst, p.Queue)
	case p.MTU != 0 && (p.MTU < 68 || p.MTU > 65535):
		return p, fmt.Errorf("MTU %d: want 68 to 65535, or 0 for the links'", p.MTU)
	case p.BlackHole && p.MTU == 0:
		return p, errors.New("a black hole needs an MTU: it drops what exceeds it")
	case p.Delay < 0:
		return p, fmt.Errorf("delay %v must not be negative", p.Delay)
	case math.IsNaN(p.Duplicate) || p.Duplicate < 0 || p.Duplicate > 1:
		return p, fmt.Errorf("duplicate %v: want a probability from 0 to 1", p.Duplicate)
	case p.Police != nil && (p.Police.Rate < 8*model.KbitPerSecond || p.Police.Burst < model.Bytes(mtu)):
		// nftables' limit counts whole bytes per second, and a bucket
		// smaller than a packet drops every full-size one.
		return p, fmt.Errorf("policer %v with a %d-byte bucket: want at least 8 kbit/s and a bucket of one packet (%d bytes)", p.Police.Rate, p.Police.Burst, mtu)
	}
	if err := validGE(p.GE); err != nil {
		return p, err
	}
	if p.Rate == 0 {
		// No tbf: burst and queue mean nothing.
		p.Burst, p.Queue = 0, 0
		return p, nil
	}
	if p.Burst == 0 {
		p.Burst = DefaultBurst(p.Rate, mtu)
	}
	if p.Burst < model.Bytes(mtu+ethHeader) {
		// A bucket smaller than a frame never holds enough tokens to send
		// one: tbf would drop every full-size packet.
		return p, fmt.Errorf("burst %d: smaller than one frame (%d bytes)", p.Burst, mtu+ethHeader)
	}
	if p.Queue == 0 {
		p.Queue = DefaultQueue
	}
	return p, nil
}

// limit is the tbf queue size in bytes: the bucket plus Queue's worth of
// rate, which is what tc computes from "latency".
func (p Impairment) limit() model.Bytes {
	return p.Burst + model.Bytes(math.Ceil(p.Rate.BytesPerSecond()*p.Queue.Seconds()))
}

// tbfArgs is the tc command (after "tc -n NS") that installs p on link.
func (p Impairment) tbfArgs(link string) []string {
	return []string{
		"qdisc", "replace", "dev", link, "root", "tbf",
		"rate", strconv.FormatInt(int64(math.Round(float64(p.Rate))), 10) + "bit",
		"burst", strconv.FormatInt(int64(p.Burst), 10),
		"limit", strconv.FormatInt(int64(p.limit()), 10),
	}
}

// htbArgs are the tc commands (each after "tc -n NS") that install p on
// link with htb instead of tbf: one class at the rate, its bucket the
// burst, over a byte-limited drop-tail queue (bfifo) of Rate × Queue.
// The quantum of one frame keeps htb from warning at high rates.
func (p Impairment) htbArgs(link string, mtu int) [][]string {
	rate := strconv.FormatInt(int64(math.Round(float64(p.Rate))), 10) + "bit"
	queue := max(model.Bytes(math.Ceil(p.Rate.BytesPerSecond()*p.Queue.Seconds())), model.Bytes(mtu+ethHeader))
	return [][]string{
		{"qdisc", "replace", "dev", link, "root", "handle", "1:", "htb", "default", "1"},
		{"class", "replace", "dev", link, "parent", "1:", "classid", "1:1", "htb", "rate", rate, "ceil", rate,
			"burst", strconv.FormatInt(int64(p.Burst), 10), "quantum", strconv.Itoa(mtu + ethHeader)},
		{"qdisc", "replace", "dev", link, "parent", "1:1", "handle", "10:", "bfifo", "limit", strconv.FormatInt(int64(queue), 10)},
	}
}

// lossThreshold maps a probability onto numgen's range [0, lossScale).
func lossThreshold(p float64) uint64 {
	return uint64(math.Round(p * lossScale))
}

// nftTable is the nftables table, in the router, that holds the loss rule
// of direction d. Both directions' tables live in R, so each has its own.
func nftTable(d Dir) string { return dirTable("", d) }

// lossScript is the nft script that makes link's ingress drop packets with
// probability loss, replacing any previous rule in table in one
// transaction. With loss 0 it only removes the table. Declaring the table
// before deleting it makes the delete succeed whether or not the table
// existed.
func lossScript(table, link string, loss float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table netdev %s {}\ndelete table netdev %s\n", table, table)
	if loss == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "table netdev %s {\n", table)
	b.WriteString("\tchain loss {\n")
	fmt.Fprintf(&b, "\t\ttype filter hook ingress device %q priority 0; policy accept;\n", link)
	// numgen's values run 0..lossScale-1, so "< lossScale" cannot be
	// written; a path that drops everything (a black hole) drops outright.
	cond := fmt.Sprintf("numgen random mod %d < %d ", lossScale, lossThreshold(loss))
	if lossThreshold(loss) >= lossScale {
		cond = ""
	}
	fmt.Fprintf(&b, "\t\tmeta protocol { ip, ip6 } %scounter drop comment %q\n",
		cond, fmt.Sprintf("tcpscope lab: random loss %g", loss))
	b.WriteString("\t}\n}\n")
	return b.String()
}

// sysctl is one key and value to write.
type sysctl struct{ key, value string }

// sysctls lists the per-namespace settings of h in the order they are
// written. rmem_max and wmem_max are not among them: they are host-wide and
// checked separately.
func (h HostConfig) sysctls() ([]sysctl, error) {
	var out []sysctl
	toggle := func(key string, t Toggle) error {
		switch t {
		case Unset:
		case On:
			out = append(out, sysctl{key, "1"})
		case Off:
			out = append(out, sysctl{key, "0"})
		default:
			return fmt.Errorf("%s: bad toggle %d", key, t)
		}
		return nil
	}
	if err := errors.Join(
		toggle("net.ipv4.tcp_sack", h.SACK),
		toggle("net.ipv4.tcp_timestamps", h.Timestamps),
		toggle("net.ipv4.tcp_window_scaling", h.WindowScaling),
	); err != nil {
		return nil, err
	}
	for _, m := range []struct {
		key string
		b   BufferSizes
	}{{"net.ipv4.tcp_rmem", h.Rmem}, {"net.ipv4.tcp_wmem", h.Wmem}} {
		if m.b.IsZero() {
			continue
		}
		if m.b.Min <= 0 || m.b.Default < m.b.Min || m.b.Max < m.b.Default {
			return nil, fmt.Errorf("%s %q: want 0 < min ≤ default ≤ max", m.key, m.b)
		}
		out = append(out, sysctl{m.key, m.b.String()})
	}
	if h.CongestionControl != "" {
		out = append(out, sysctl{"net.ipv4.tcp_congestion_control", h.CongestionControl})
	}
	if h.RmemMax < 0 || h.WmemMax < 0 {
		return nil, fmt.Errorf("rmem_max %d, wmem_max %d: must not be negative", h.RmemMax, h.WmemMax)
	}
	keys := make([]string, 0, len(h.Sysctls))
	for k := range h.Sysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := sysctlPath(k); err != nil {
			return nil, err
		}
		out = append(out, sysctl{k, h.Sysctls[k]})
	}
	return out, nil
}

// sysctlPath maps "net.ipv4.tcp_sack" or "net/ipv4/tcp_sack" to its file
// under /proc/sys. Only net.* keys are accepted: they are the ones a network
// namespace has its own copy of, and a write to anything else would change
// the whole machine.
func sysctlPath(key string) (string, error) {
	rel := key
	if !strings.Contains(rel, "/") {
		rel = strings.ReplaceAll(rel, ".", "/")
	}
	rel = strings.TrimPrefix(rel, "/")
	if !strings.HasPrefix(rel, "net/") || strings.Contains(rel, "..") || strings.HasSuffix(rel, "/") {
		return "", fmt.Errorf("lab: sysctl %q: only net.* keys are per network namespace", key)
	}
	return "/proc/sys/" + rel, nil
}

// nsNames returns the namespace names of pair seq created by pid: hosts A
// and B and router R.
func nsNames(pid int, seq uint32) (a, b, r string) {
	base := fmt.Sprintf("%s%d-%d-", NamePrefix, pid, seq)
	return base + "a", base + "b", base + "r"
}

// Cleaned is what Clean removed.
type Cleaned struct {
	Namespaces int // lab namespaces whose creating process was gone
	Processes  int // processes that were still running in them
}

// creatorPID extracts the creating pid from a lab namespace name; ok is
// false for names the lab did not make.
func creatorPID(name string) (pid int, ok bool) {
	rest, found := strings.CutPrefix(name, NamePrefix)
	if !found {
		return 0, false
	}
	num, _, found := strings.Cut(rest, "-")
	if !found {
		return 0, false
	}
	pid, err := strconv.Atoi(num)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// parseNetnsList reads the output of `ip netns list`: one namespace per
// line, optionally followed by " (id: N)".
func parseNetnsList(out string) []string {
	var names []string
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

// linkPrefixes picks the subnets of the two links: 10.199.N.0/24 between
// A and R, 10.200.N.0/24 between R and B. Each pair is an island (its
// namespaces share no routes with anything), so two pairs with the same
// subnets could not collide; N still varies with pid and sequence so that
// concurrent pairs are easy to tell apart in captures and errors.
func linkPrefixes(pid int, seq uint32) (a, b netip.Prefix) {
	n := byte(1 + (uint32(pid)*31+seq)%254)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 199, n, 0}), 24),
		netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 200, n, 0}), 24)
}

// hostAddr and routerAddr are a host's and the router's address on a
// link's subnet: .1 for the host, .254 for the router (its gateway).
func hostAddr(p netip.Prefix) netip.Addr { return p.Addr().Next() }

func routerAddr(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	a[3] = 254
	return netip.AddrFrom4(a)
}

// nftDropped sums the packet counters of the rules in `nft -j list table`
// output: the packets the loss rule dropped.
func nftDropped(out string) (uint64, error) {
	var doc struct {
		Nftables []struct {
			Rule *struct {
				Expr []struct {
					Counter *struct {
						Packets uint64 `json:"packets"`
					} `json:"counter"`
				} `json:"expr"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return 0, fmt.Errorf("read nft counters: %w", err)
	}
	var n uint64
	found := false
	for _, obj := range doc.Nftables {
		if obj.Rule == nil {
			continue
		}
		for _, e := range obj.Rule.Expr {
			if e.Counter != nil {
				n += e.Counter.Packets
				found = true
			}
		}
	}
	if !found {
		return 0, errors.New("read nft counters: no counter in the loss table")
	}
	return n, nil
}
