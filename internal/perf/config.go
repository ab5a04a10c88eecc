package perf

import (
	"fmt"
	"time"

	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
)

// Defaults and bounds of a test.
const (
	DefaultDuration = 10 * time.Second
	DefaultInterval = time.Second
	// DefaultLength is the write size, iperf3's 128 KiB. Writes of 1 MiB
	// moved 1.5-2x the rate on loopback, but a sender holding its socket
	// through a 1 MiB copy sends what the ACKs queued behind it allowed
	// in one burst: against a stock iperf3 server, -t 2, 138-348
	// retransmissions on loopback against stock's 7-20 and 57-60k across
	// a veth pair against 13-17k; with 128 KiB writes (and the sending
	// thread locked, end.go) 1-16 and 18-33k (docs/BENCHMARKS.md).
	DefaultLength = 128 * model.KiB
	MinInterval   = 10 * time.Millisecond
	MaxParallel   = 128
	// MaxTestDuration bounds -t and -O each, as iperf3 bounds -t (86400 s):
	// their sum then stays far from time.Duration's overflow, which made a
	// sum that wrapped negative pass the server's duration limit.
	MaxTestDuration = 24 * time.Hour
	maxLength       = 4 * model.MiB
	maxWindow       = 1 * model.GiB
)

// Limits bound what a server accepts, the same for every client
// address; zero fields take the defaults. A Server's Policy, when set,
// replaces them with classes of addresses (package limits).
type Limits struct {
	MaxTests    int           // concurrent tests
	MaxDuration time.Duration // per test, including the omitted start
	MaxStreams  int           // per test, counting both directions
	// MaxTotalStreams bounds the streams of all running tests together,
	// and with it the server's buffer memory: at most 1 MiB of receive
	// buffer per stream, plus one write buffer of -l bytes (4 MiB at most)
	// per sending test, whatever clients ask for.
	MaxTotalStreams int
	// MaxTestsPerAddr bounds the tests one client address runs at once,
	// those still opening their streams included, so that one address
	// cannot hold every slot (hellos that never open their streams,
	// renewed as they time out, did).
	MaxTestsPerAddr int
	// MaxPendingPerAddr bounds the connections from one address that
	// have not yet become part of a test (idle, or mid-handshake), and
	// MaxPending those from all addresses together: idle connections
	// from one address ran the server out of file descriptors, and
	// everybody's accepts failed meanwhile.
	MaxPendingPerAddr int
	MaxPending        int
}

// DefaultLimits are a server's limits unless configured: the built-in
// policy's.
var DefaultLimits = limitsOf(limits.Builtin())

func limitsOf(t limits.Table) Limits {
	return Limits{MaxTests: t.Server.MaxTests, MaxDuration: t.Default.MaxDuration, MaxStreams: t.Default.MaxStreams,
		MaxTotalStreams: t.Server.MaxTotalStreams, MaxTestsPerAddr: t.Default.MaxTestsPerAddr,
		MaxPendingPerAddr: t.Default.MaxPendingPerAddr, MaxPending: t.Server.MaxPending}
}

// Table is the policy of these limits: one class for every address.
func (l Limits) Table() limits.Table {
	l = l.withDefaults()
	t := limits.Builtin()
	t.Server = limits.Server{MaxTests: l.MaxTests, MaxTotalStreams: l.MaxTotalStreams, MaxPending: l.MaxPending}
	t.Default.MaxDuration = l.MaxDuration
	t.Default.MaxStreams = l.MaxStreams
	t.Default.MaxTestsPerAddr = l.MaxTestsPerAddr
	t.Default.MaxPendingPerAddr = l.MaxPendingPerAddr
	t.Source = "command-line limits"
	return t
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	for _, f := range []struct{ v, def *int }{
		{&l.MaxTests, &d.MaxTests}, {&l.MaxStreams, &d.MaxStreams}, {&l.MaxTotalStreams, &d.MaxTotalStreams},
		{&l.MaxTestsPerAddr, &d.MaxTestsPerAddr}, {&l.MaxPendingPerAddr, &d.MaxPendingPerAddr}, {&l.MaxPending, &d.MaxPending},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if l.MaxDuration <= 0 {
		l.MaxDuration = d.MaxDuration
	}
	return l
}

// Normalize fills defaults into c and checks it. Both ends call it: the
// client before connecting, the server on what it receives.
func Normalize(c *model.TestConfig) error {
	if err := fillDefaults(c); err != nil {
		return err
	}
	if c.IsUDP() {
		if err := checkUDP(c); err != nil {
			return err
		}
	}
	if err := checkAmounts(c); err != nil {
		return err
	}
	return checkOptions(c)
}

// fillDefaults fills what c leaves out: TCP, one stream, the protocol's
// write length, the interval, and a duration for a test of neither time
// nor bytes.
func fillDefaults(c *model.TestConfig) error {
	if c.Protocol == "" {
		c.Protocol = model.TCP
	}
	if c.Protocol != model.TCP && c.Protocol != model.UDP {
		return fault.Errorf(fault.BadConfig, "use tcp or udp", "protocol %q not supported", c.Protocol)
	}
	if c.Parallel == 0 {
		c.Parallel = 1
	}
	if c.Length == 0 {
		c.Length = DefaultLength
		if c.IsUDP() {
			c.Length = DefaultUDPLength
		}
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Duration == 0 && c.Bytes == 0 {
		c.Duration = DefaultDuration
	}
	return nil
}

// checkUDP checks what a UDP test asks that TCP would not.
func checkUDP(c *model.TestConfig) error {
	switch {
	case c.Length < MinUDPLength || c.Length > MaxUDPLength:
		return fault.Errorf(fault.BadConfig, fmt.Sprintf("use -l between %d and %d bytes for UDP", MinUDPLength, MaxUDPLength), "datagram length %d B out of range", c.Length)
	case c.Congestion != "" || c.MSS != 0 || c.NoDelay || c.ZeroCopy || c.SkipRxCopy:
		return fault.Errorf(fault.BadConfig, "drop -C, -M, -N, -Z and --skip-rx-copy with -u", "congestion control, MSS, no-delay, zero-copy sending and skip-rx-copy are TCP options")
	case c.ReadRate != 0:
		return fault.Errorf(fault.BadConfig, "drop --read-rate with -u", "--read-rate is a TCP test (a slow reader closes the window)")
	}
	return nil
}

// checkAmounts checks a test's streams, time, bytes and sizes.
func checkAmounts(c *model.TestConfig) error {
	switch {
	case c.Parallel < 1 || c.Parallel > MaxParallel:
		return fault.Errorf(fault.BadConfig, fmt.Sprintf("use -P between 1 and %d", MaxParallel), "parallel streams %d out of range", c.Parallel)
	case c.Duration < 0 || c.Bytes < 0:
		return fault.Errorf(fault.BadConfig, "durations and byte counts must be positive", "negative duration or byte count")
	case c.Duration > MaxTestDuration || c.Omit > MaxTestDuration:
		return fault.Errorf(fault.BadConfig, "use -t and -O of at most 24 hours", "duration %v or omit %v over 24 hours", c.Duration, c.Omit)
	case c.Interval > MaxTestDuration:
		return fault.Errorf(fault.BadConfig, "use -i of at most 24 hours", "interval %v over 24 hours", c.Interval)
	case c.Duration > 0 && c.Bytes > 0:
		return fault.Errorf(fault.BadConfig, "use either -t or -n", "both a duration and a byte count given")
	case c.Length < 1 || c.Length > maxLength:
		return fault.Errorf(fault.BadConfig, "use -l between 1 B and 4 MiB", "write length %d B out of range", c.Length)
	case c.Window < 0 || c.Window > maxWindow:
		return fault.Errorf(fault.BadConfig, "use -w up to 1 GiB", "window %d B out of range", c.Window)
	case c.Interval < MinInterval:
		return fault.Errorf(fault.BadConfig, "use -i 10ms or more", "interval %v below the 10 ms minimum", c.Interval)
	case c.Omit < 0:
		return fault.Errorf(fault.BadConfig, "use -O with a positive duration", "negative omit %v", c.Omit)
	case c.Reverse && c.Bidir:
		return fault.Errorf(fault.BadConfig, "--bidir already sends both ways", "-R and --bidir together")
	}
	return nil
}

// checkOptions checks a test's CPUs, socket options and rates.
func checkOptions(c *model.TestConfig) error {
	switch {
	case c.ClientCPU != nil && (*c.ClientCPU < 0 || *c.ClientCPU > 1023), c.ServerCPU != nil && (*c.ServerCPU < 0 || *c.ServerCPU > 1023):
		return fault.Errorf(fault.BadConfig, "use -A with CPU numbers from 0, as the kernel counts them", "CPU number out of range 0 to 1023")
	case c.TOS < 0 || c.TOS > 255:
		return fault.Errorf(fault.BadConfig, "use -S between 0 and 255 (--dscp between 0 and 63)", "type of service %d out of range", c.TOS)
	case c.MSS < 0 || (c.MSS > 0 && (c.MSS < 88 || c.MSS > 65535)):
		return fault.Errorf(fault.BadConfig, "use -M between 88 and 65535 bytes", "MSS %d out of range", c.MSS)
	case c.FQRate < 0:
		return fault.Errorf(fault.BadConfig, "use a positive pacing rate", "negative pacing rate")
	case c.Bitrate > model.MaxBitrate || c.FQRate > model.MaxBitrate || c.ReadRate > model.MaxBitrate:
		return fault.Errorf(fault.BadConfig, "rates go up to 1 Pbit/s; -b 0 is as fast as possible", "a rate over 1 Pbit/s")
	case c.Bitrate < 0 || (c.Bitrate > 0 && c.Bitrate < minReadRate):
		return fault.Errorf(fault.BadConfig, "use -b of 8 kbit/s or more", "bitrate %v out of range", c.Bitrate)
	case c.ReadRate < 0 || (c.ReadRate > 0 && c.ReadRate < minReadRate):
		return fault.Errorf(fault.BadConfig, "use --read-rate of 8 kbit/s or more", "read rate %v out of range", c.ReadRate)
	}
	return nil
}

// minReadRate is the slowest -b and --read-rate: below it even a small
// buffer takes minutes to drain after the test.
const minReadRate = 8 * model.KbitPerSecond

// span is how long the senders run: the omitted start plus the duration
// (zero for a byte-count test).
func span(c *model.TestConfig) time.Duration {
	if c.Duration == 0 {
		return 0
	}
	return c.Omit + c.Duration
}

// checkLimits applies a client's class to a normalized config; foreign
// is the protocol of a client that is not tcpscope's (limits.Iperf3: a
// stock iperf3), or 0.
func checkLimits(c *model.TestConfig, cl *limits.Class, foreign limits.Protocols) error {
	want := limits.TCP
	if c.IsUDP() {
		want = limits.UDP
	}
	want |= foreign
	if cl.Protocols&want != want {
		what := string(c.Protocol) + " tests"
		if foreign != 0 {
			what += " from " + foreign.String() + " clients"
		}
		return fault.Errorf(fault.Denied, fmt.Sprintf("this server allows %s from your address", cl.Protocols), "%s not allowed from your address", what)
	}
	streams := len(c.Directions())
	if streams > cl.MaxStreams {
		return fault.Errorf(fault.Limit, fmt.Sprintf("ask for at most %d streams", cl.MaxStreams), "%d streams over the server's limit of %d", streams, cl.MaxStreams)
	}
	if d := span(c); d > cl.MaxDuration {
		return fault.Errorf(fault.Limit, fmt.Sprintf("ask for at most %v", cl.MaxDuration), "duration %v over the server's limit of %v", d, cl.MaxDuration)
	}
	capRate, over := overRate(c, cl)
	if !over {
		return nil
	}
	perStream := capRate / model.Bitrate(streams)
	if c.Bitrate == 0 {
		return fault.Errorf(fault.Limit, fmt.Sprintf("ask for -b %v or less per stream", perStream),
			"-b 0 (as fast as possible) over the server's UDP cap of %v per test", capRate)
	}
	return fault.Errorf(fault.Limit, fmt.Sprintf("ask for -b %v or less per stream with %d streams", perStream, streams),
		"-b %v per stream, %v in all, over the server's cap of %v per test", c.Bitrate, c.Bitrate*model.Bitrate(streams), capRate)
}

// overRate says whether a test's -b, over all its streams, is over its
// class's cap, and what the cap is (0: none). A UDP test without a rate
// (-b 0) is as fast as it goes, over any cap; a TCP test without one is
// held to the cap by the server (serverEnd).
func overRate(c *model.TestConfig, cl *limits.Class) (model.Bitrate, bool) {
	capRate := cl.MaxRate
	if c.IsUDP() {
		capRate = cl.MaxUDPRate
	}
	if capRate == 0 {
		return 0, false
	}
	if c.Bitrate == 0 {
		return capRate, c.IsUDP()
	}
	return capRate, float64(c.Bitrate)*float64(len(c.Directions())) > float64(capRate)
}

// serverEnd is the config the server's end of a test runs, and the rate
// its TCP receivers read at most (0: any): the client's config, with a
// TCP rate cap applied to each stream's share. What the server sends is
// paced by the kernel (SO_MAX_PACING_RATE, which works with any qdisc
// since TCP paces itself); what it receives is read no faster, so that
// the receive window closes on a client that sends faster. The client's
// -b, within the cap (checkLimits), is left as asked.
func serverEnd(c model.TestConfig, cl *limits.Class) (model.TestConfig, model.Bitrate) {
	if c.IsUDP() || cl.MaxRate == 0 {
		return c, 0
	}
	share := cl.MaxRate / model.Bitrate(len(c.Directions()))
	if c.FQRate == 0 || c.FQRate > share {
		c.FQRate = share
	}
	return c, share
}
