package emulator

import "encoding/binary"

// IP and ICMP numbers used here (RFC 791, 792, 8200, 4443).
const (
	ipv4HeaderLen  = 20
	ipv6HeaderLen  = 40
	icmpHeaderLen  = 8
	protoICMP      = 1
	protoICMPv6    = 58
	flagDF         = 0x40 // in the byte at offset 6 of an IPv4 header
	icmpUnreach    = 3
	icmpFragNeeded = 4 // code of icmpUnreach
	icmp6TooBig    = 2
	ipv6MinMTU     = 1280
	replyTTL       = 64
	tosControl     = 0xc0 // precedence "internetwork control", as routers send ICMP
)

// oversize applies an MTU to pkt, a whole IP packet. It reports drop=false
// when the packet fits or mtu is 0. Otherwise the packet is dropped, and
// reply is the "too big" answer to send back to its source, or nil when
// none is due: a black hole, IPv4 without DF, a packet that must not be
// answered, or one too mangled to parse.
func oversize(pkt []byte, mtu int, blackHole bool) (drop bool, reply []byte) {
	if mtu == 0 || len(pkt) <= mtu {
		return false, nil
	}
	if blackHole || len(pkt) == 0 {
		return true, nil
	}
	switch pkt[0] >> 4 {
	case 4:
		return true, fragNeeded(pkt, mtu)
	case 6:
		return true, packetTooBig(pkt, mtu)
	}
	return true, nil
}

// fragNeeded builds ICMP "fragmentation needed and DF set" for an oversize
// IPv4 packet with DF, or returns nil for one that gets no answer.
func fragNeeded(pkt []byte, mtu int) []byte {
	if len(pkt) < ipv4HeaderLen {
		return nil
	}
	ihl := int(pkt[0]&0x0f) * 4
	if ihl < ipv4HeaderLen || ihl > len(pkt) || pkt[6]&flagDF == 0 {
		return nil
	}
	src, dst := pkt[12:16], pkt[16:20]
	fragOffset := binary.BigEndian.Uint16(pkt[6:8]) & 0x1fff
	if fragOffset != 0 || !unicast4(src) || !unicast4(dst) {
		return nil
	}
	if pkt[9] == protoICMP && len(pkt) > ihl && icmpError(pkt[ihl]) {
		return nil
	}
	quote := min(len(pkt), ihl+8)
	out := make([]byte, ipv4HeaderLen+icmpHeaderLen+quote)
	out[0] = 4<<4 | ipv4HeaderLen/4
	out[1] = tosControl
	binary.BigEndian.PutUint16(out[2:], uint16(len(out)))
	out[8] = replyTTL
	out[9] = protoICMP
	copy(out[12:16], dst) // from the packet's destination
	copy(out[16:20], src) // back to its source
	binary.BigEndian.PutUint16(out[10:], checksum(out[:ipv4HeaderLen], 0))

	icmp := out[ipv4HeaderLen:]
	icmp[0], icmp[1] = icmpUnreach, icmpFragNeeded
	binary.BigEndian.PutUint16(icmp[6:], uint16(mtu)) // next-hop MTU (RFC 1191)
	copy(icmp[icmpHeaderLen:], pkt[:quote])
	binary.BigEndian.PutUint16(icmp[2:], checksum(icmp, 0))
	return out
}

// icmpError reports whether an ICMPv4 type is an error message, which no
// ICMP error may answer (RFC 1122 3.2.2).
func icmpError(typ byte) bool {
	switch typ {
	case 3, 4, 5, 11, 12: // unreachable, source quench, redirect, time exceeded, parameter problem
		return true
	}
	return false
}

// unicast4 reports whether a is an address an error may name: not
// 0.0.0.0/8, multicast, or the limited broadcast.
func unicast4(a []byte) bool {
	return a[0] != 0 && a[0]&0xf0 != 0xe0 && !(a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255)
}

// packetTooBig builds ICMPv6 Packet Too Big for an oversize IPv6 packet,
// quoting as much of it as fits in the minimum IPv6 MTU, or returns nil for
// one that gets no answer.
func packetTooBig(pkt []byte, mtu int) []byte {
	if len(pkt) < ipv6HeaderLen {
		return nil
	}
	src, dst := pkt[8:24], pkt[24:40]
	if unspecified6(src) || src[0] == 0xff || dst[0] == 0xff {
		// No source to answer, or a multicast destination we could not
		// send from.
		return nil
	}
	// An ICMPv6 error (type < 128) gets no answer. Only a directly
	// following ICMPv6 header is recognized; behind extension headers a
	// packet is answered.
	if pkt[6] == protoICMPv6 && len(pkt) > ipv6HeaderLen && pkt[ipv6HeaderLen] < 128 {
		return nil
	}
	quote := min(len(pkt), ipv6MinMTU-ipv6HeaderLen-icmpHeaderLen)
	out := make([]byte, ipv6HeaderLen+icmpHeaderLen+quote)
	out[0] = 6 << 4
	binary.BigEndian.PutUint16(out[4:], uint16(icmpHeaderLen+quote))
	out[6] = protoICMPv6
	out[7] = replyTTL
	copy(out[8:24], dst)
	copy(out[24:40], src)

	icmp := out[ipv6HeaderLen:]
	icmp[0] = icmp6TooBig
	binary.BigEndian.PutUint32(icmp[4:], uint32(mtu))
	copy(icmp[icmpHeaderLen:], pkt[:quote])
	binary.BigEndian.PutUint16(icmp[2:], checksum(icmp, pseudoHeader6(out[8:24], out[24:40], len(icmp), protoICMPv6)))
	return out
}

func unspecified6(a []byte) bool {
	for _, b := range a {
		if b != 0 {
			return false
		}
	}
	return true
}

// pseudoHeader6 is the unfolded sum of the IPv6 pseudo-header (RFC 8200
// 8.1) that upper-layer checksums cover.
func pseudoHeader6(src, dst []byte, length int, next byte) uint64 {
	var sum uint64
	for i := 0; i < 16; i += 2 {
		sum += uint64(binary.BigEndian.Uint16(src[i:])) + uint64(binary.BigEndian.Uint16(dst[i:]))
	}
	return sum + uint64(length>>16) + uint64(length&0xffff) + uint64(next)
}

// checksum is the Internet checksum (RFC 1071) of b, starting from the
// unfolded sum initial: the complement of the folded ones' complement sum.
func checksum(b []byte, initial uint64) uint16 {
	sum := initial
	for len(b) >= 2 {
		sum += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint64(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
