package model

import (
	"net/netip"
	"time"
)

// HostInfo is what a host audit reads: the TCP and socket sysctls and
// each network interface. Values are as the kernel shows them; sysctls
// keep their text ("4096 131072 6291456").
type HostInfo struct {
	Kernel string `json:"kernel,omitempty"`
	// Sysctls by dotted key ("net.ipv4.tcp_rmem"), only those the audit
	// reads; a key the kernel lacks is absent.
	Sysctls    map[string]string `json:"sysctls"`
	Interfaces []Interface       `json:"interfaces"`
}

// Interface is one network interface.
type Interface struct {
	Name       string `json:"name"`
	Loopback   bool   `json:"loopback,omitempty"`
	Up         bool   `json:"up"`
	MTU        int    `json:"mtu"`
	TxQueueLen int    `json:"tx_queue_len"`
	// Speed is absent when the driver does not say (virtual devices).
	Speed  Opt[Bitrate] `json:"speed,omitzero"`
	Duplex string       `json:"duplex,omitempty"` // "full", "half", or empty when unknown
	Driver string       `json:"driver,omitempty"`
	// Qdisc is the root queueing discipline ("fq_codel", "pfifo_fast").
	Qdisc string `json:"qdisc,omitempty"`
	// Offloads are absent when the device does not answer ethtool.
	Offloads Opt[Offloads] `json:"offloads,omitzero"`
	// Counters since boot.
	RxErrors, TxErrors, RxDropped, TxDropped, RxCRCErrors, CarrierChanges uint64
}

// Offloads are an interface's segmentation and receive offloads, as
// `ethtool -k` shows them.
type Offloads struct {
	TSO bool `json:"tso"` // TCP segmentation offload
	GSO bool `json:"gso"` // generic segmentation offload
	GRO bool `json:"gro"` // generic receive offload
}

// PathFacts are what a few TCP connections learn of a path before any
// test: the round trip from the handshake (no ICMP needed), the MSS the
// two ends agreed on, and the path MTU the kernel knows.
type PathFacts struct {
	Addr string `json:"addr"`
	// Connects is how many handshakes were timed; RTTMin and RTTMedian
	// summarize them (a connect returns after one round trip).
	Connects  int           `json:"connects"`
	RTTMin    time.Duration `json:"rtt_min_ns"`
	RTTMedian time.Duration `json:"rtt_median_ns"`
	MSS       int           `json:"mss"`
	PMTU      int           `json:"pmtu"`
}

// Socket is one TCP connection as the kernel's sock_diag reports it, for
// watching connections tcpscope did not open.
type Socket struct {
	Local  netip.AddrPort `json:"local"`
	Remote netip.AddrPort `json:"remote"`
	// IPv6 says the socket is an IPv6 one (its addresses may be
	// IPv4-mapped, shown unmapped).
	IPv6 bool `json:"ipv6,omitempty"`
	// Cookie identifies the socket for its lifetime (addresses can be
	// reused); Inode links it to the process holding it.
	Cookie uint64 `json:"cookie"`
	Inode  uint32 `json:"inode"`
	UID    uint32 `json:"uid"`
	// PID and Process own the socket, when this process may see them.
	PID     int    `json:"pid,omitempty"`
	Process string `json:"process,omitempty"`
	// TCP is the kernel's state: tcp_info, congestion control and BBR,
	// with RecvQ and SendQ from the diag message. Its At is when it was
	// read, on the watcher's clock.
	TCP Sample `json:"tcp"`
}

// Brief is s as a connection list shows it.
func (s *Socket) Brief() SocketBrief {
	return SocketBrief{Local: s.Local, Remote: s.Remote, IPv6: s.IPv6, Cookie: s.Cookie, Inode: s.Inode, PID: s.PID, Process: s.Process, TCP: s.TCP.Brief()}
}

// SocketBrief is a Socket as a connection list shows it: its ends, its
// owner, and the few kernel variables the list prints and computes rates
// from. A busy host has tens of thousands of connections, and a
// SocketBrief is a quarter of a Socket's size: listing them all stays
// cheap, and the full Sample is read for the connections shown in detail.
type SocketBrief struct {
	Local, Remote netip.AddrPort
	// IPv6 is an IPv6 socket (its IPv4-mapped addresses given unmapped).
	IPv6    bool
	Cookie  uint64
	Inode   uint32
	PID     int
	Process string
	TCP     SampleBrief
}
