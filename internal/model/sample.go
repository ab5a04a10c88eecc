package model

import (
	"encoding/json"
	"fmt"
	"time"
)

// Sample is one read of a TCP socket's kernel state (Linux struct tcp_info
// plus the congestion-control name and BBR model), converted to Go units.
//
// Fields every Linux kernel since 2.6 returns are plain values; fields added
// later are Opt and absent when the kernel's struct was too short. KernelLen
// records how many bytes of struct tcp_info the kernel returned.
type Sample struct {
	// At is when the sample was taken, relative to the start of the test
	// (monotonic clock of the end that took it).
	At        time.Duration `json:"at_ns"`
	KernelLen int           `json:"kernel_len"`

	State       TCPState `json:"state"`
	CAState     CAState  `json:"ca_state"`
	Retransmits uint8    `json:"retransmits"` // unrecovered RTO timeouts now
	Probes      uint8    `json:"probes"`      // zero-window or keepalive probes in flight
	Backoff     uint8    `json:"backoff"`
	Options     Options  `json:"options"`

	// DeliveryRateAppLimited says the latest delivery-rate sample was limited
	// by the application, not the network.
	DeliveryRateAppLimited bool `json:"delivery_rate_app_limited"`

	RTO time.Duration `json:"rto_ns"`
	ATO time.Duration `json:"ato_ns"`

	SndMSS Bytes `json:"snd_mss"`
	RcvMSS Bytes `json:"rcv_mss"`
	AdvMSS Bytes `json:"advmss"`
	PMTU   Bytes `json:"pmtu"`

	Unacked uint32 `json:"unacked"` // segments sent and not yet acknowledged
	Sacked  uint32 `json:"sacked"`
	Lost    uint32 `json:"lost"`    // segments the sender now believes lost
	Retrans uint32 `json:"retrans"` // retransmitted segments now in flight
	Fackets uint32 `json:"fackets"`

	LastDataSent time.Duration `json:"last_data_sent_ns"`
	LastDataRecv time.Duration `json:"last_data_recv_ns"`
	LastAckRecv  time.Duration `json:"last_ack_recv_ns"`

	RcvSsthresh Bytes         `json:"rcv_ssthresh"`
	RTT         time.Duration `json:"rtt_ns"` // smoothed RTT
	RTTVar      time.Duration `json:"rttvar_ns"`
	// SndSsthresh is in segments; SsthreshInfinite reports the kernel's
	// "not yet set" value (still in initial slow start).
	SndSsthresh      uint32        `json:"snd_ssthresh"`
	SsthreshInfinite bool          `json:"ssthresh_infinite"`
	SndCwnd          uint32        `json:"snd_cwnd"` // segments
	Reordering       uint32        `json:"reordering"`
	RcvRTT           time.Duration `json:"rcv_rtt_ns"`
	RcvSpace         Bytes         `json:"rcv_space"`
	TotalRetrans     uint32        `json:"total_retrans"` // cumulative retransmitted segments

	// PacingRate is absent when unlimited (the kernel's ~0).
	PacingRate    Opt[Bitrate] `json:"pacing_rate,omitzero"`
	MaxPacingRate Opt[Bitrate] `json:"max_pacing_rate,omitzero"`
	BytesAcked    Opt[Bytes]   `json:"bytes_acked,omitzero"`
	BytesReceived Opt[Bytes]   `json:"bytes_received,omitzero"`
	SegsOut       Opt[uint32]  `json:"segs_out,omitzero"`
	SegsIn        Opt[uint32]  `json:"segs_in,omitzero"`

	NotsentBytes Opt[Bytes]         `json:"notsent_bytes,omitzero"`
	MinRTT       Opt[time.Duration] `json:"min_rtt_ns,omitzero"`
	DataSegsIn   Opt[uint32]        `json:"data_segs_in,omitzero"`
	DataSegsOut  Opt[uint32]        `json:"data_segs_out,omitzero"`

	DeliveryRate Opt[Bitrate] `json:"delivery_rate,omitzero"`

	// BusyTime includes RwndLimited and SndbufLimited (see LimitedFractions).
	BusyTime      Opt[time.Duration] `json:"busy_time_ns,omitzero"`
	RwndLimited   Opt[time.Duration] `json:"rwnd_limited_ns,omitzero"`
	SndbufLimited Opt[time.Duration] `json:"sndbuf_limited_ns,omitzero"`

	Delivered   Opt[uint32] `json:"delivered,omitzero"`
	DeliveredCE Opt[uint32] `json:"delivered_ce,omitzero"`

	BytesSent    Opt[Bytes]  `json:"bytes_sent,omitzero"` // includes retransmissions
	BytesRetrans Opt[Bytes]  `json:"bytes_retrans,omitzero"`
	DSACKDups    Opt[uint32] `json:"dsack_dups,omitzero"`
	ReordSeen    Opt[uint32] `json:"reord_seen,omitzero"`

	RcvOOOPack Opt[uint32] `json:"rcv_ooopack,omitzero"`
	SndWnd     Opt[Bytes]  `json:"snd_wnd,omitzero"` // the peer's advertised window
	RcvWnd     Opt[Bytes]  `json:"rcv_wnd,omitzero"` // our advertised window
	Rehash     Opt[uint32] `json:"rehash,omitzero"`

	TotalRTO           Opt[uint32]        `json:"total_rto,omitzero"`
	TotalRTORecoveries Opt[uint32]        `json:"total_rto_recoveries,omitzero"`
	TotalRTOTime       Opt[time.Duration] `json:"total_rto_time_ns,omitzero"`

	ReceivedCE Opt[uint32] `json:"received_ce,omitzero"`

	// RecvQ is the bytes received and not yet read by the application;
	// SendQ the bytes written and not yet acknowledged (ss's Recv-Q and
	// Send-Q). Not part of tcp_info: absent when not read.
	RecvQ Opt[Bytes] `json:"recv_q,omitzero"`
	SendQ Opt[Bytes] `json:"send_q,omitzero"`
	// SndBuf is the send buffer's size now (SO_SNDBUF as the kernel holds
	// it, autotuning included; like SendQ not part of tcp_info). A send
	// queue above it is a writer the buffer held: see diagnose's
	// sndbufBinds.
	SndBuf Opt[Bytes] `json:"sndbuf,omitzero"`

	// Congestion is the congestion-control algorithm, when known.
	Congestion string `json:"congestion,omitempty"`
	// BBR is the BBR model, for connections using BBR.
	BBR *BBRInfo `json:"bbr,omitempty"`
}

// CwndBytes is the congestion window in bytes (the kernel counts segments).
func (s *Sample) CwndBytes() Bytes { return Bytes(s.SndCwnd) * s.SndMSS }

// SsthreshBytes is the slow-start threshold in bytes, absent while infinite.
func (s *Sample) SsthreshBytes() Opt[Bytes] {
	if s.SsthreshInfinite {
		return Opt[Bytes]{}
	}
	return Some(Bytes(s.SndSsthresh) * s.SndMSS)
}

// UnackedBytes estimates the bytes in flight from segments × MSS.
func (s *Sample) UnackedBytes() Bytes { return Bytes(s.Unacked) * s.SndMSS }

// SampleBrief is the part of a Sample a connection list uses; the fields
// mean what Sample's do.
type SampleBrief struct {
	At           time.Duration
	State        TCPState
	Congestion   string
	RTT          time.Duration
	SndMSS       Bytes
	SndCwnd      uint32
	TotalRetrans uint32
	// BytesAcked and BytesReceived give a list its rates.
	BytesAcked    Opt[Bytes]
	BytesReceived Opt[Bytes]
	// LastDataSent and LastDataRecv (absent without tcp_info), RecvQ and
	// SendQ tell a list's idle connections (watch.ListRow.Idle).
	LastDataSent, LastDataRecv Opt[time.Duration]
	RecvQ, SendQ               Opt[Bytes]
}

// Brief is the part of s a connection list uses.
func (s *Sample) Brief() SampleBrief {
	return SampleBrief{
		At: s.At, State: s.State, Congestion: s.Congestion, RTT: s.RTT, SndMSS: s.SndMSS, SndCwnd: s.SndCwnd,
		TotalRetrans: s.TotalRetrans, BytesAcked: s.BytesAcked, BytesReceived: s.BytesReceived,
		LastDataSent: s.lastData(s.LastDataSent), LastDataRecv: s.lastData(s.LastDataRecv), RecvQ: s.RecvQ, SendQ: s.SendQ,
	}
}

// lastData is a last_data_* time, absent when the kernel gave no tcp_info.
func (s *Sample) lastData(d time.Duration) Opt[time.Duration] {
	if s.KernelLen == 0 {
		return Opt[time.Duration]{}
	}
	return Some(d)
}

// CwndBytes is the congestion window in bytes (the kernel counts segments).
func (s *SampleBrief) CwndBytes() Bytes { return Bytes(s.SndCwnd) * s.SndMSS }

// Options are the TCP options negotiated on the connection.
type Options struct {
	SACK       bool `json:"sack"`
	Timestamps bool `json:"timestamps"`
	// WindowScaling is negotiated; SndWScale is the shift the peer applies
	// to the windows it advertises, RcvWScale the shift we apply.
	WindowScaling bool `json:"window_scaling"`
	SndWScale     int  `json:"snd_wscale"`
	RcvWScale     int  `json:"rcv_wscale"`
	ECN           bool `json:"ecn"`
	ECNSeen       bool `json:"ecn_seen"`
	SYNData       bool `json:"syn_data"`
	USecTS        bool `json:"usec_ts"`
}

// String lists the negotiated options, e.g. "SACK TS WS(7/9)".
func (o Options) String() string {
	s := ""
	add := func(v string) {
		if s != "" {
			s += " "
		}
		s += v
	}
	if o.SACK {
		add("SACK")
	} else {
		add("no-SACK")
	}
	if o.Timestamps {
		add("TS")
	} else {
		add("no-TS")
	}
	if o.WindowScaling {
		add(fmt.Sprintf("WS(%d/%d)", o.SndWScale, o.RcvWScale))
	} else {
		add("no-WS")
	}
	if o.ECN {
		add("ECN")
	}
	return s
}

// BBRInfo is BBR's model of the path (struct tcp_bbr_info).
type BBRInfo struct {
	BW         Bitrate       `json:"bw"`
	MinRTT     time.Duration `json:"min_rtt_ns"`
	PacingGain float64       `json:"pacing_gain"`
	CwndGain   float64       `json:"cwnd_gain"`
}

// Mode infers BBR's state machine phase from its gains: the kernel does not
// export the mode itself, but each phase uses distinctive gains (BBRv1
// startup ≈2.89, drain ≈0.35, probe_bw cycles 1.25/0.75/1 with cwnd gain 2,
// probe_rtt runs at gain 1 with cwnd gain 1).
func (b *BBRInfo) Mode() string {
	switch {
	case b.PacingGain > 2:
		return "startup"
	case b.PacingGain < 0.5:
		return "drain"
	case b.PacingGain == 1 && b.CwndGain <= 1:
		return "probe_rtt"
	default:
		return "probe_bw"
	}
}

// TCPState is the socket state (TCP_ESTABLISHED ...).
type TCPState uint8

// The kernel's TCP states (include/net/tcp_states.h), by its numbers.
const (
	TCPEstablished TCPState = iota + 1
	TCPSynSent
	TCPSynRecv
	TCPFinWait1
	TCPFinWait2
	TCPTimeWait
	TCPClose
	TCPCloseWait
	TCPLastAck
	TCPListen
	TCPClosing
	TCPNewSynRecv
	TCPBoundInactive
)

var tcpStates = [...]string{"unknown", "established", "syn-sent", "syn-recv", "fin-wait-1", "fin-wait-2", "time-wait", "close", "close-wait", "last-ack", "listen", "closing", "new-syn-recv", "bound-inactive"}

func (s TCPState) String() string {
	if int(s) < len(tcpStates) {
		return tcpStates[s]
	}
	return fmt.Sprintf("state-%d", uint8(s))
}

// MarshalJSON writes the state by name.
func (s TCPState) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a state name.
func (s *TCPState) UnmarshalJSON(b []byte) error {
	return unmarshalEnum(b, tcpStates[:], (*uint8)(s))
}

// CAState is the congestion-avoidance state of the sender.
type CAState uint8

var caStates = [...]string{"open", "disorder", "cwr", "recovery", "loss"}

func (s CAState) String() string {
	if int(s) < len(caStates) {
		return caStates[s]
	}
	return fmt.Sprintf("ca-%d", uint8(s))
}

// MarshalJSON writes the state by name.
func (s CAState) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a state name.
func (s *CAState) UnmarshalJSON(b []byte) error {
	return unmarshalEnum(b, caStates[:], (*uint8)(s))
}

func unmarshalEnum(b []byte, names []string, dst *uint8) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	for i, n := range names {
		if n == name {
			*dst = uint8(i)
			return nil
		}
	}
	var v uint8
	if _, err := fmt.Sscanf(name, "state-%d", &v); err == nil {
		*dst = v
		return nil
	}
	if _, err := fmt.Sscanf(name, "ca-%d", &v); err == nil {
		*dst = v
		return nil
	}
	return fmt.Errorf("unknown state %q", name)
}
