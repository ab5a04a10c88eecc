package engine

import (
	"fmt"
	"time"

	"github.com/tcpscope/tcpscope/internal/fault"
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
		return fault.Errorf(fault.BadConfig, fmt.Sprintf("use {length} between %d and %d bytes for UDP", MinUDPLength, MaxUDPLength), "datagram length %d B out of range", c.Length)
	case c.Congestion != "" || c.MSS != 0 || c.NoDelay || c.ZeroCopy || c.SkipRxCopy:
		return fault.Errorf(fault.BadConfig, "drop {congestion}, {mss}, {no_delay}, {zerocopy} and {skip_rx_copy} with {udp}", "congestion control, MSS, no-delay, zero-copy sending and skip-rx-copy are TCP options")
	case c.ReadRate != 0:
		return fault.Errorf(fault.BadConfig, "drop {read_rate} with {udp}", "--read-rate is a TCP test (a slow reader closes the window)")
	}
	return nil
}

// checkAmounts checks a test's streams, time, bytes and sizes.
func checkAmounts(c *model.TestConfig) error {
	switch {
	case c.Parallel < 1 || c.Parallel > MaxParallel:
		return fault.Errorf(fault.BadConfig, fmt.Sprintf("use {parallel} between 1 and %d", MaxParallel), "parallel streams %d out of range", c.Parallel)
	case c.Duration < 0 || c.Bytes < 0:
		return fault.Errorf(fault.BadConfig, "durations and byte counts must be positive", "negative duration or byte count")
	case c.Duration > MaxTestDuration || c.Omit > MaxTestDuration:
		return fault.Errorf(fault.BadConfig, "use {duration_ns} and {omit_ns} of at most 24 hours", "duration %v or omit %v over 24 hours", c.Duration, c.Omit)
	case c.Interval > MaxTestDuration:
		return fault.Errorf(fault.BadConfig, "use {interval_ns} of at most 24 hours", "interval %v over 24 hours", c.Interval)
	case c.Duration > 0 && c.Bytes > 0:
		return fault.Errorf(fault.BadConfig, "use either {duration_ns} or {bytes}", "both a duration and a byte count given")
	case c.Length < 1 || c.Length > maxLength:
		return fault.Errorf(fault.BadConfig, "use {length} between 1 B and 4 MiB", "write length %d B out of range", c.Length)
	case c.Window < 0 || c.Window > maxWindow:
		return fault.Errorf(fault.BadConfig, "use {window} up to 1 GiB", "window %d B out of range", c.Window)
	case c.Interval < MinInterval:
		return fault.Errorf(fault.BadConfig, "use {interval_ns} 10ms or more", "interval %v below the 10 ms minimum", c.Interval)
	case c.Omit < 0:
		return fault.Errorf(fault.BadConfig, "use {omit_ns} with a positive duration", "negative omit %v", c.Omit)
	case c.Reverse && c.Bidir:
		return fault.Errorf(fault.BadConfig, "{bidir} already sends both ways", "-R and --bidir together")
	}
	return nil
}

// checkOptions checks a test's CPUs, socket options and rates.
func checkOptions(c *model.TestConfig) error {
	switch {
	case c.ClientCPU != nil && (*c.ClientCPU < 0 || *c.ClientCPU > 1023), c.ServerCPU != nil && (*c.ServerCPU < 0 || *c.ServerCPU > 1023):
		return fault.Errorf(fault.BadConfig, "use {client_cpu} with CPU numbers from 0, as the kernel counts them", "CPU number out of range 0 to 1023")
	case c.TOS < 0 || c.TOS > 255:
		return fault.Errorf(fault.BadConfig, "use {tos} between 0 and 255 (a DSCP between 0 and 63)", "type of service %d out of range", c.TOS)
	case c.MSS < 0 || (c.MSS > 0 && (c.MSS < 88 || c.MSS > 65535)):
		return fault.Errorf(fault.BadConfig, "use {mss} between 88 and 65535 bytes", "MSS %d out of range", c.MSS)
	case c.FQRate < 0:
		return fault.Errorf(fault.BadConfig, "use a positive {fq_rate}", "negative pacing rate")
	case c.Bitrate > model.MaxBitrate || c.FQRate > model.MaxBitrate || c.ReadRate > model.MaxBitrate:
		return fault.Errorf(fault.BadConfig, "rates go up to 1 Pbit/s; {bitrate} 0 is as fast as possible", "a rate over 1 Pbit/s")
	case c.Bitrate < 0 || (c.Bitrate > 0 && c.Bitrate < minReadRate):
		return fault.Errorf(fault.BadConfig, "use {bitrate} of 8 kbit/s or more", "bitrate %v out of range", c.Bitrate)
	case c.ReadRate < 0 || (c.ReadRate > 0 && c.ReadRate < minReadRate):
		return fault.Errorf(fault.BadConfig, "use {read_rate} of 8 kbit/s or more", "read rate %v out of range", c.ReadRate)
	}
	return nil
}

// minReadRate is the slowest -b and --read-rate: below it even a small
// buffer takes minutes to drain after the test.
const minReadRate = 8 * model.KbitPerSecond

// Span is how long the senders run: the omitted start plus the duration
// (zero for a byte-count test).
func Span(c *model.TestConfig) time.Duration {
	if c.Duration == 0 {
		return 0
	}
	return c.Omit + c.Duration
}

// checkLimits applies a client's class to a normalized config; foreign
