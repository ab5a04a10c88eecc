package serve

import (
	"fmt"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
)

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
	if d := engine.Span(c); d > cl.MaxDuration {
		return fault.Errorf(fault.Limit, fmt.Sprintf("ask for at most %v", cl.MaxDuration), "duration %v over the server's limit of %v", d, cl.MaxDuration)
	}
	capRate, over := overRate(c, cl)
	if !over {
		return nil
	}
	perStream := capRate / model.Bitrate(streams)
	if c.Bitrate == 0 {
		return fault.Errorf(fault.Limit, fmt.Sprintf("ask for {bitrate} %v or less per stream", perStream),
			"-b 0 (as fast as possible) over the server's UDP cap of %v per test", capRate)
	}
	return fault.Errorf(fault.Limit, fmt.Sprintf("ask for {bitrate} %v or less per stream with %d streams", perStream, streams),
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

// Capped is the config the server's end of a test runs, and the rate
// its TCP receivers read at most (0: any): the client's config, with a
// TCP rate cap applied to each stream's share. What the server sends is
// paced by the kernel (SO_MAX_PACING_RATE, which works with any qdisc
// since TCP paces itself); what it receives is read no faster, so that
// the receive window closes on a client that sends faster. The client's
// -b, within the cap (checkLimits), is left as asked.
func Capped(c model.TestConfig, cl *limits.Class) (model.TestConfig, model.Bitrate) {
	if c.IsUDP() || cl.MaxRate == 0 {
		return c, 0
	}
	share := cl.MaxRate / model.Bitrate(len(c.Directions()))
	if c.FQRate == 0 || c.FQRate > share {
		c.FQRate = share
	}
	return c, share
}
