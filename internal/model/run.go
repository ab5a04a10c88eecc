package model

import (
	"fmt"
	"time"
)

// SchemaVersion names the layout of Run and of the JSON event stream.
// Consumers should ignore fields they do not know; a change that removes or
// redefines a field bumps the number.
const SchemaVersion = "tcpscope.test/1"

// Direction says which way a stream's data flows.
type Direction string

// Directions of a stream.
const (
	ClientToServer Direction = "client-to-server"
	ServerToClient Direction = "server-to-client"
)

// Role is what one end does on a stream.
type Role string

// Roles of an end on a stream.
const (
	Sender   Role = "sender"
	Receiver Role = "receiver"
)

// Side names an end of a test.
type Side string

// The two ends of a test.
const (
	ClientSide Side = "client"
	ServerSide Side = "server"
)

// RoleOf is the role side plays on a stream flowing in direction d.
func RoleOf(side Side, d Direction) Role {
	if (side == ClientSide) == (d == ClientToServer) {
		return Sender
	}
	return Receiver
}

// TestConfig is what the client asked for. Zero values mean "the kernel's
// or tcpscope's default".
type TestConfig struct {
	Protocol   string        `json:"protocol"` // "tcp" or "udp"
	Duration   time.Duration `json:"duration_ns,omitempty"`
	Bytes      Bytes         `json:"bytes,omitempty"` // volume per direction instead of a duration
	Parallel   int           `json:"parallel"`
	Reverse    bool          `json:"reverse,omitempty"`
	Bidir      bool          `json:"bidir,omitempty"`
	Window     Bytes         `json:"window,omitempty"` // SO_SNDBUF and SO_RCVBUF on both ends
	Length     Bytes         `json:"length"`           // application write size
	Congestion string        `json:"congestion,omitempty"`
	MSS        int           `json:"mss,omitempty"`
	NoDelay    bool          `json:"no_delay,omitempty"`
	// ZeroCopy makes TCP senders hand the kernel their block with
	// sendfile(2) instead of copying it with write(2) (iperf3's -Z).
	ZeroCopy bool `json:"zerocopy,omitempty"`
	// SkipRxCopy makes TCP receivers read with MSG_TRUNC: the kernel
	// counts the bytes and discards them without copying them to the
	// application (iperf3 3.19's --skip-rx-copy). A server older than
	// this field ignores it and copies.
	SkipRxCopy bool          `json:"skip_rx_copy,omitempty"`
	Interval   time.Duration `json:"interval_ns"`
	Omit       time.Duration `json:"omit_ns,omitempty"`
	FQRate     Bitrate       `json:"fq_rate,omitempty"` // per-stream SO_MAX_PACING_RATE
	// Bitrate makes each sending stream's application write at most this
	// fast (iperf3's -b for TCP): an application-limited sender.
	Bitrate Bitrate `json:"bitrate,omitempty"`
	// Counters64 makes UDP datagrams carry 64-bit sequence numbers
	// (iperf3's --udp-counters-64bit); tcpscope's own tests always do.
	Counters64 bool `json:"udp_counters_64bit,omitempty"`
	// ReadRate makes each receiving stream's application read at most
	// this fast until the senders' planned end: a slow consumer (a disk,
	// a busy process) whose window closes.
	ReadRate Bitrate `json:"read_rate,omitempty"`
	// TOS is the IP type-of-service byte of both ends' data sockets
	// (iperf3's -S; --dscp sets its top six bits); 0 leaves the
	// kernel's default. A server older than this field ignores it.
	TOS int `json:"tos,omitempty"`
	// ClientCPU is the CPU the client pinned itself to (-A n), and
	// ServerCPU the one it asked the server to pin itself to (-A n,m);
	// nil: none. Whether the server did is in the run's warnings.
	ClientCPU *int `json:"client_cpu,omitempty"`
	ServerCPU *int `json:"server_cpu,omitempty"`
	// NoGSO makes UDP senders hand the kernel single datagrams
	// (sendmmsg) instead of GSO super-buffers (UDP_SEGMENT); the
	// datagrams on the wire are the same either way.
	NoGSO bool `json:"no_gso,omitempty"`
	// GRO makes UDP receivers take coalesced buffers (UDP_GRO) where the
	// kernel has it: less receiver CPU, but the kernel then counts
	// dropped buffers, not datagrams, so socket drops are not measured.
	GRO bool `json:"gro,omitempty"`
}

// Protocols of a test.
const (
	TCP = "tcp"
	UDP = "udp"
)

// IsUDP reports a datagram test.
func (c *TestConfig) IsUDP() bool { return c.Protocol == UDP }

// Directions lists the stream directions the test uses, in stream order.
func (c *TestConfig) Directions() []Direction {
	var out []Direction
	for range c.Parallel {
		switch {
		case c.Bidir:
			out = append(out, ClientToServer)
		case c.Reverse:
			out = append(out, ServerToClient)
		default:
			out = append(out, ClientToServer)
		}
	}
	if c.Bidir {
		for range c.Parallel {
			out = append(out, ServerToClient)
		}
	}
	return out
}

// SocketSetup is what one end's kernel granted for one stream's socket.
type SocketSetup struct {
	SndBuf     Bytes  `json:"sndbuf"` // SO_SNDBUF as read back: SockBufFor the request
	RcvBuf     Bytes  `json:"rcvbuf"`
	Congestion string `json:"congestion,omitempty"`
	MSS        int    `json:"mss,omitempty"` // TCP_MAXSEG as read back
	// TOS is the type-of-service byte as read back (IP_TOS or
	// IPV6_TCLASS), when the test asked for one (-S, --dscp).
	TOS *int `json:"tos,omitempty"`
}

// StreamInfo describes one data connection. A setup is nil when that
// end's kernel was not read: a stock iperf3 peer reports none.
type StreamInfo struct {
	ID         int          `json:"id"`
	Direction  Direction    `json:"direction"`
	ClientAddr string       `json:"client_addr"`
	ServerAddr string       `json:"server_addr"`
	Client     *SocketSetup `json:"client,omitempty"`
	Server     *SocketSetup `json:"server,omitempty"`
}

// StreamInterval is one end's view of one stream over one interval.
type StreamInterval struct {
	Stream int  `json:"stream"`
	Role   Role `json:"role"`
	// Bytes the application wrote (sender) or read (receiver) in the
	// interval, and their rate over it. A sender's writes land in its
	// socket buffer in bursts, so its Rate is not what the path carried
	// in the interval: AckedRate is.
	Bytes Bytes   `json:"bytes"`
	Rate  Bitrate `json:"rate"`
	// AckedBytes is what the receiver acknowledged in the interval, by
	// the sender's kernel (Δ tcpi_bytes_acked, without the FIN's sequence
	// number): the bytes delivered. AckedRate is their rate between the
	// two kernel reads that bound them. A sender's, TCP only; absent for a
	// receiver, when the socket could not be read, or from a kernel
	// without the counter (before 4.1).
	AckedBytes Opt[Bytes]   `json:"acked_bytes,omitzero"`
	AckedRate  Opt[Bitrate] `json:"acked_rate,omitzero"`
	// OutOfOrder is the segments a receiver's kernel queued out of order
	// in the interval (Δ tcpi_rcv_ooopack; TCP.RcvOOOPack is the count
	// since the connection began). Absent for a sender, or from a kernel
	// without the counter (before 5.4).
	OutOfOrder Opt[uint32] `json:"ooo_segs,omitzero"`
	// Deltas of the kernel's cumulative counters over the interval.
	RetransSegs  uint32       `json:"retrans_segs"`
	RetransBytes Opt[Bytes]   `json:"retrans_bytes,omitzero"`
	Limited      Opt[Limited] `json:"limited,omitzero"`
	// TCP is the kernel's state at the end of the interval (zero in UDP
	// tests).
	TCP Sample `json:"tcp"`
	// UDP is the datagram account over the interval (UDP tests only).
	UDP *Datagrams `json:"udp,omitempty"`
}

// Datagrams is one end's account of a UDP stream over a period, in
// iperf3's terms so the numbers compare with its reports.
type Datagrams struct {
	// Packets: a sender's datagrams sent; a receiver's datagrams expected,
	// from the sequence numbers seen (received + lost).
	Packets int64 `json:"packets"`
	// Lost is the gaps in the sequence, less the datagrams that came late
	// (out of order) to fill one; receivers only.
	Lost       int64 `json:"lost,omitempty"`
	OutOfOrder int64 `json:"out_of_order,omitempty"`
	// Jitter is RFC 3550's smoothed transit-time variation at the end of
	// the period; receivers only.
	Jitter time.Duration `json:"jitter_ns,omitempty"`
	// SocketDrops counts datagrams the receiving socket's full buffer
	// dropped (SO_RXQ_OVFL): loss on this host, not on the path. Unknown
	// when the kernel does not report it.
	SocketDrops Opt[int64] `json:"socket_drops,omitzero"`
}

// Add adds another stream's account to d: counts add up, the jitter is
// the worse of the two, and socket drops stay known only if both are.
func (d *Datagrams) Add(o *Datagrams) {
	d.Packets += o.Packets
	d.Lost += o.Lost
	d.OutOfOrder += o.OutOfOrder
	d.Jitter = max(d.Jitter, o.Jitter)
	if v, ok := o.SocketDrops.Get(); ok && d.SocketDrops.OK {
		d.SocketDrops.V += v
	} else {
		d.SocketDrops = Opt[int64]{}
	}
}

// LossRate is the fraction of expected datagrams lost.
func (d *Datagrams) LossRate() float64 {
	if d == nil || d.Packets <= 0 {
		return 0
	}
	return float64(d.Lost) / float64(d.Packets)
}

// Interval is one end's view of all streams over [Start, End) of its clock.
type Interval struct {
	Index   int              `json:"index"`
	Start   time.Duration    `json:"start_ns"`
	End     time.Duration    `json:"end_ns"`
	Omitted bool             `json:"omitted,omitempty"`
	Streams []StreamInterval `json:"streams"`
	// CPU is the end's process CPU use over the interval (from one
	// sample to the next, on the wall clock); nil when the end did not
	// measure it: a tcpscope peer older than this field, a stock iperf3
	// peer (which reports its CPU for the whole test only).
	CPU *CPUUse `json:"cpu,omitempty"`
}

// StreamTotal is one end's account of one stream over the measured period
// (after the omitted start).
type StreamTotal struct {
	Stream int  `json:"stream"`
	Role   Role `json:"role"`
	// Bytes moved by the application in the measured period, and over its
	// duration: for a receiver, until the last byte arrived.
	Bytes    Bytes         `json:"bytes"`
	Duration time.Duration `json:"duration_ns"`
	Rate     Bitrate       `json:"rate"`
	// AllBytes includes the omitted start.
	AllBytes Bytes `json:"all_bytes"`
	// RetransSegs is a sender's retransmitted segments; absent for a
	// receiver and for a peer that did not report them.
	RetransSegs  Opt[uint32] `json:"retrans_segs,omitzero"`
	RetransBytes Opt[Bytes]  `json:"retrans_bytes,omitzero"`
	// SentBytes is what a sender's kernel sent in the measured period,
	// retransmissions included (Δ tcpi_bytes_sent).
	SentBytes Opt[Bytes] `json:"sent_bytes,omitzero"`
	// Final is the kernel's state after the last byte; nil when this
	// end's kernel was not read (a stock iperf3 peer's account has only
	// its application's counts).
	Final *Sample `json:"final,omitempty"`
	// StartMinRTT is the kernel's min_rtt when the stream's first sample
	// was read, before the test's data moved: the handshake's round
	// trip, timed to the microsecond. EndReport.MinRTT reads it.
	StartMinRTT Opt[time.Duration] `json:"start_min_rtt_ns,omitzero"`
	// Peak values seen over the samples; absent without samples.
	MaxCwnd   Opt[Bytes]         `json:"max_cwnd,omitzero"`
	MaxRTT    Opt[time.Duration] `json:"max_rtt_ns,omitzero"`
	MaxSndWnd Opt[Bytes]         `json:"max_snd_wnd,omitzero"`
	// Limited covers the measured period.
	Limited Opt[Limited] `json:"limited,omitzero"`
	// UDP is the datagram account over the measured period (UDP tests).
	UDP *Datagrams `json:"udp,omitempty"`
	// UDPOmitted is the account of the omitted start (-O), UDP tests.
	UDPOmitted *Datagrams `json:"udp_omitted,omitempty"`
	// Tail says how this end kept the stream's end near the planned end
	// of a timed TCP test; nil when it held nothing back and cut nothing.
	Tail *Tail `json:"tail,omitempty"`
}

// Tail is how one end kept a timed TCP stream from running past the
// planned end while a large send buffer drained at the path's rate
// (docs/PROTOCOL.md, "How a test ends").
type Tail struct {
	// HeldFrom is when a sender, with time left, wrote for the last time
	// (its clock): from then on it wrote nothing, so that what it had
	// queued, Queued (written and not yet acknowledged, SIOCOUTQ, at its
	// first write held back), would drain by the planned end at the rate
	// its peer acknowledged.
	HeldFrom Opt[time.Duration] `json:"held_from_ns,omitzero"`
	Queued   Opt[Bytes]         `json:"queued,omitzero"`
	// CutAt is when this end stopped waiting for the rest, past the
	// planned end (its clock): a receiver stopped reading and counts what
	// it had read; an iperf3 client stopped waiting for the server to
	// read and ended the test.
	CutAt Opt[time.Duration] `json:"cut_at_ns,omitzero"`
}

// TailSummary is how a direction's end was kept near the planned end.
type TailSummary struct {
	// HeldFor is the longest any sending stream wrote nothing before the
	// planned end so that its queue drained by then; Queued is what the
	// streams that held back had queued when they began to.
	HeldFor Opt[time.Duration] `json:"held_for_ns,omitzero"`
	Queued  Opt[Bytes]         `json:"queued,omitzero"`
	// CutAt is the latest cut (the cutting end's clock), and Uncounted
	// what the sender wrote that the receiver did not count (all bytes,
	// the omitted start's too), when both ends reported.
	CutAt     Opt[time.Duration] `json:"cut_at_ns,omitzero"`
	Uncounted Opt[Bytes]         `json:"uncounted,omitzero"`
}

// EndReport is everything one end measured.
type EndReport struct {
	Side    Side   `json:"side"`
	Version string `json:"version"`
	// Kernel is the end's kernel release; empty when the peer did not
	// say (stock iperf3).
	Kernel string `json:"kernel,omitempty"`
	// NoKernelState says this end's kernel TCP state was not read: a
	// stock iperf3 peer reports only its application's byte counts (and
	// a sender's retransmissions), so its intervals and its totals'
	// kernel fields are absent, not zero.
	NoKernelState bool `json:"no_kernel_state,omitempty"`
	// Congestion is the congestion control the end says it used, for an
	// end whose sockets were not read (a stock iperf3 peer's
	// congestion_used); a tcpscope end reports it per socket instead.
	Congestion string        `json:"congestion,omitempty"`
	Intervals  []Interval    `json:"intervals"`
	Totals     []StreamTotal `json:"totals"`
	// CPU is the end's process CPU use over its test; nil when the end
	// did not report it (a tcpscope server older than this field).
	CPU *CPUUse `json:"cpu,omitempty"`
	// CPUs is how many CPUs the end's process may run on (its affinity
	// mask, as runtime.NumCPU reads it); absent when the end did not say.
	CPUs Opt[int] `json:"cpus,omitzero"`
	// CPUQuota is the CPU time the end's cgroup allows it, in cores (a
	// cgroup v2 cpu.max or v1 cpu.cfs_quota_us over its period, the
	// tightest of its cgroup and their ancestors); absent when no quota
	// holds it or the end did not say.
	CPUQuota Opt[float64] `json:"cpu_quota_cores,omitzero"`
	// RateCap is the rate a server end held the test to, all streams
	// together, by its limits for the client's address; absent when it
	// held it to none.
	RateCap Bitrate `json:"rate_cap,omitempty"`
	// Settings are the end's TCP buffer settings when its test began, in
	// its network namespace; nil when the end did not say (stock iperf3,
	// a tcpscope end older than this field) or could not read them.
	Settings *TCPSettings `json:"tcp_settings,omitempty"`
}

// TCPSettings are the kernel settings that bound an end's windows and
// buffers: what a fix for a window or a buffer must be computed from.
type TCPSettings struct {
	// Rmem and Wmem are net.ipv4.tcp_rmem and tcp_wmem: the bounds of
	// receive and send buffer autotuning (min, default, max).
	Rmem Opt[BufferBounds] `json:"tcp_rmem,omitzero"`
	Wmem Opt[BufferBounds] `json:"tcp_wmem,omitzero"`
	// RmemMax and WmemMax are net.core.rmem_max and wmem_max, the caps on
	// what SO_RCVBUF and SO_SNDBUF may ask (autotuning ignores them).
	RmemMax Opt[Bytes] `json:"rmem_max,omitzero"`
	WmemMax Opt[Bytes] `json:"wmem_max,omitzero"`
	// Autotuning is net.ipv4.tcp_moderate_rcvbuf: the receive buffer
	// grows with the connection's need (send buffers always do).
	Autotuning Opt[bool] `json:"moderate_rcvbuf,omitzero"`
	// WindowScaling is net.ipv4.tcp_window_scaling.
	WindowScaling Opt[bool] `json:"window_scaling,omitzero"`
}

// BufferBounds is a min, default and max triple as net.ipv4.tcp_rmem
// holds them.
type BufferBounds struct {
	Min     Bytes `json:"min"`
	Default Bytes `json:"default"`
	Max     Bytes `json:"max"`
}

// LinuxRmem and LinuxWmem are the minimum and default of Linux's
// net.ipv4.tcp_rmem and tcp_wmem (Documentation/networking/ip-sysctl.rst):
// what a fix that raises only the maximum keeps where an end's own were
// not read. Their Max is unset.
var (
	LinuxRmem = BufferBounds{Min: 4096, Default: 131072}
	LinuxWmem = BufferBounds{Min: 4096, Default: 16384}
)

// WithMax is b with its maximum set to max.
func (b BufferBounds) WithMax(max Bytes) BufferBounds {
	b.Max = max
	return b
}

// String is b as sysctl reads and writes it, in bytes: "4096 131072 6291456".
func (b BufferBounds) String() string {
	return fmt.Sprintf("%d %d %d", int64(b.Min), int64(b.Default), int64(b.Max))
}

// CPUUse is a process's CPU time over a test as a share of the test's
// wall-clock time, in percent of one CPU (so above 100 on several), as
// iperf3 reports it: Total is User + System.
type CPUUse struct {
	Total  float64 `json:"total_percent"`
	User   float64 `json:"user_percent"`
	System float64 `json:"system_percent"`
	// Throttled is the share of its cgroup's CPU-quota periods (those in
	// which it had work) that ended with the end throttled: it wanted
	// more CPU than its quota gave. Absent when no quota holds the end,
	// or the end did not say.
	Throttled Opt[float64] `json:"throttled_share,omitzero"`
}

// DirectionSummary is the headline of one direction: what the receiver
// received over the receiver's time, with the sender's account beside it.
// A figure an end did not report is absent, never zero.
type DirectionSummary struct {
	Direction Direction `json:"direction"`
	Streams   int       `json:"streams"`
	// SenderBytes is what the sending application wrote; absent when the
	// sender's report is missing.
	SenderBytes Opt[Bytes] `json:"sender_bytes,omitzero"`
	// ReceiverBytes is what the receiving application read, over
	// Duration, the receiver's measured time. Without the receiver's
	// report they come from the sender's kernel, what the receiver
	// acknowledged (FromAcks), over the sender's time; absent when
	// neither is known.
	ReceiverBytes Opt[Bytes]         `json:"receiver_bytes,omitzero"`
	Duration      Opt[time.Duration] `json:"duration_ns,omitzero"`
	Goodput       Opt[Bitrate]       `json:"goodput,omitzero"`
	FromAcks      bool               `json:"from_acks,omitempty"`
	SenderRate    Opt[Bitrate]       `json:"sender_rate,omitzero"`
	// RetransSegs is absent when the sender did not report them.
	RetransSegs  Opt[uint32] `json:"retrans_segs,omitzero"`
	RetransBytes Opt[Bytes]  `json:"retrans_bytes,omitzero"`
	// LossRate is retransmitted / sent bytes at the sender, when known.
	LossRate Opt[float64]       `json:"loss_rate,omitzero"`
	MinRTT   Opt[time.Duration] `json:"min_rtt_ns,omitzero"`
	// MeanRTT is the mean over the sender's streams of their final
	// smoothed RTT; absent when the sender's kernel was not read.
	MeanRTT Opt[time.Duration] `json:"mean_rtt_ns,omitzero"`
	// UDP sums the receivers' datagram accounts (UDP tests): LossRate is
	// then Lost/Packets, and Jitter the largest stream's.
	UDP *Datagrams `json:"udp,omitempty"`
	// Tail says how the end of a timed TCP test was kept near its
	// planned end: senders held back their last writes, or an end cut
	// the wait for the rest; nil when neither happened.
	Tail *TailSummary `json:"tail,omitempty"`
}

// NewRun starts the record of a test against server, begun at start,
// by a client of version (for the header, before its end reports it).
func NewRun(server string, cfg TestConfig, start time.Time, version string) *Run {
	run := &Run{Schema: SchemaVersion, Start: start.UTC(), Server: server, Config: cfg}
	run.Client.Side, run.Remote.Side = ClientSide, ServerSide
	run.Client.Version = version
	return run
}

// Observer sees a client's test while it runs. Calls are serialised.
type Observer interface {
	// Begin is called once the streams are set up, before data flows.
	Begin(run *Run)
	// Interval is called for each interval of either end as it completes.
	Interval(side Side, iv *Interval)
}

// Run is one complete memory-to-memory test as both ends saw it.
type Run struct {
	Schema string    `json:"schema"`
	Start  time.Time `json:"start"` // wall clock, for the record only
	Server string    `json:"server"`
	// Cookie names the test at the server: iperf3's 36 characters, or
	// the native protocol's 16 bytes in hex.
	Cookie   string             `json:"cookie,omitempty"`
	Config   TestConfig         `json:"config"`
	Streams  []StreamInfo       `json:"streams"`
	Client   EndReport          `json:"client"`
	Remote   EndReport          `json:"server_end"`
	Summary  []DirectionSummary `json:"summary"`
	Warnings []string           `json:"warnings,omitempty"`
	// ServerRateCap is the rate the server held this TCP test to, all
	// streams together, by its limits for the client's address: it paced
	// what it sent and read no faster. Absent: the server capped nothing
	// (or could not say: a stock iperf3 server).
	ServerRateCap Bitrate `json:"server_rate_cap,omitempty"`
	// ServerOutput is a stock iperf3 server's own output, when asked for
	// (--get-server-output): its text, or its JSON document.
	ServerOutput string `json:"server_output,omitempty"`
	// Diagnosis is what limits the transfer and what else is wrong,
	// primary finding first; absent with --no-diagnose.
	Diagnosis []Finding `json:"diagnosis,omitempty"`
	// Ended says how the test stopped: "complete", "interrupted" (the
	// client was stopped), "server-shutdown", "server-limit" (the server's
	// --max-duration cut a byte-count test short) or "aborted" (it broke
	// off; the receiver's report may be missing). Empty until it ends.
	Ended string `json:"ended,omitempty"`
}

// StreamIDs is the set of the run's streams flowing in direction d.
func (r *Run) StreamIDs(d Direction) map[int]bool {
	ids := map[int]bool{}
	for _, s := range r.Streams {
		if s.Direction == d {
			ids[s.ID] = true
		}
	}
	return ids
}
