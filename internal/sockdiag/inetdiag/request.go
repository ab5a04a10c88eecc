package inetdiag

import (
	"encoding/binary"
	"net/netip"
)

// Address families (linux/socket.h).
const (
	FamilyIPv4 = 2  // AF_INET
	FamilyIPv6 = 10 // AF_INET6
)

// protoTCP is IPPROTO_TCP: tcpscope asks only for TCP sockets.
const protoTCP = 6

// Attribute types of a reply (INET_DIAG_*) and of a request
// (INET_DIAG_REQ_*).
const (
	attrInfo  = 2 // INET_DIAG_INFO: struct tcp_info
	attrVegas = 3 // INET_DIAG_VEGASINFO
	attrCong  = 4 // INET_DIAG_CONG: the congestion control's name
	// attrMemInfo is INET_DIAG_SKMEMINFO: the socket's memory counters,
	// u32 each, indexed as the kernel's SK_MEMINFO_* (the send buffer's
	// size at memSndbuf).
	attrMemInfo = 7
	memSndbuf   = 3
	attrBBRInfo = 16 // INET_DIAG_BBRINFO: struct tcp_bbr_info
	// reqBytecode is INET_DIAG_REQ_BYTECODE, the request's filter.
	reqBytecode = 1
)

// Extensions a request asks the kernel for (the request's idiag_ext:
// bit n asks for attribute n+1).
const (
	ExtInfo = 1 << (attrInfo - 1)
	// ExtVegas asks for INET_DIAG_VEGASINFO, which also brings BBR's
	// model (INET_DIAG_BBRINFO) for a BBR socket.
	ExtVegas = 1 << (attrVegas - 1)
	ExtCong  = 1 << (attrCong - 1)
	ExtMem   = 1 << (attrMemInfo - 1)
	// ExtFull is every extension a model.Socket is filled from.
	ExtFull = ExtInfo | ExtVegas | ExtCong | ExtMem
)

// AllStates is the state mask of every TCP state (1 << state).
const AllStates = 1<<12 - 1

// Sizes of the fixed parts of a request (struct inet_diag_req_v2) and a
// reply (struct inet_diag_msg).
const (
	reqLen = 56
	msgLen = 72
)

// SockID is the part of struct inet_diag_sockid a lookup names a socket
// by: its two ends and its cookie (the interface stays 0, any).
type SockID struct {
	Local, Remote netip.AddrPort
	Cookie        uint64
}

// Request is one inet_diag request for TCP sockets: a dump of a family's
// sockets in States, filtered by Bytecode when it is not empty, or a
// lookup of the one socket ID names.
type Request struct {
	Family uint8 // FamilyIPv4 or FamilyIPv6
	// Ext are the attributes to send with each socket (Ext*).
	Ext uint8
	// States is a mask of TCP states (1 << state).
	States uint32
	// ID is zero for a dump, which matches any socket.
	ID SockID
	// Bytecode is an INET_DIAG_REQ_BYTECODE filter program.
	Bytecode []byte
}

// AppendRequest appends r to b as one SOCK_DIAG_BY_FAMILY netlink
// message with the given flags (FlagRequest, and FlagDump for a dump)
// and sequence number.
func AppendRequest(b []byte, flags uint16, seq uint32, r Request) []byte {
	n := reqLen
	if len(r.Bytecode) > 0 {
		n += align(4 + len(r.Bytecode))
	}
	b = appendHeader(b, SockDiagByFamily, flags, seq, n)
	start := len(b)
	b = append(b, make([]byte, reqLen)...)
	req := b[start:]
	req[0], req[1], req[2] = r.Family, protoTCP, r.Ext
	binary.NativeEndian.PutUint32(req[4:], r.States)
	// struct inet_diag_sockid at 8: be16 sport, be16 dport, be32 src[4],
	// be32 dst[4], u32 if, u32 cookie[2].
	binary.BigEndian.PutUint16(req[8:], r.ID.Local.Port())
	binary.BigEndian.PutUint16(req[10:], r.ID.Remote.Port())
	putAddr(req[12:28], r.ID.Local.Addr(), r.Family)
	putAddr(req[28:44], r.ID.Remote.Addr(), r.Family)
	binary.NativeEndian.PutUint32(req[48:], uint32(r.ID.Cookie))
	binary.NativeEndian.PutUint32(req[52:], uint32(r.ID.Cookie>>32))
	if len(r.Bytecode) > 0 {
		b = appendAttr(b, reqBytecode, r.Bytecode)
	}
	return b
}

// appendAttr appends one netlink attribute, padded to four bytes.
func appendAttr(b []byte, typ uint16, data []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(4+len(data)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// putAddr writes a in the socket id's address field: four bytes for
// IPv4, sixteen (IPv4-mapped if need be) for IPv6. An invalid address (a
// dump's), or an IPv6 one in an IPv4 request, leaves the zeros.
func putAddr(b []byte, a netip.Addr, family uint8) {
	if !a.IsValid() {
		return
	}
	if family == FamilyIPv4 {
		if a = a.Unmap(); a.Is4() {
			v4 := a.As4()
			copy(b, v4[:])
		}
		return
	}
	v6 := a.As16()
	copy(b, v6[:])
}
