package emulator

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

var (
	src4 = netip.MustParseAddr("10.199.7.1")
	dst4 = netip.MustParseAddr("10.200.7.1")
	src6 = netip.MustParseAddr("fd00:199::1")
	dst6 = netip.MustParseAddr("fd00:200::1")
)

// ipv4 builds an IPv4 packet of size bytes carrying proto, with DF as asked
// and a valid header checksum; the payload counts up.
func ipv4(size int, df bool, proto byte) []byte {
	p := make([]byte, size)
	p[0] = 0x45
	binary.BigEndian.PutUint16(p[2:], uint16(size))
	binary.BigEndian.PutUint16(p[4:], 0x1234)
	if df {
		p[6] = flagDF
	}
	p[8], p[9] = 64, proto
	s, d := src4.As4(), dst4.As4()
	copy(p[12:], s[:])
	copy(p[16:], d[:])
	binary.BigEndian.PutUint16(p[10:], checksum(p[:20], 0))
	for i := 20; i < size; i++ {
		p[i] = byte(i)
	}
	return p
}

// ipv6 builds an IPv6 packet of size bytes with next header next.
func ipv6(size int, next byte) []byte {
	p := make([]byte, size)
	p[0] = 0x60
	binary.BigEndian.PutUint16(p[4:], uint16(size-40))
	p[6], p[7] = next, 64
	s, d := src6.As16(), dst6.As16()
	copy(p[8:], s[:])
	copy(p[24:], d[:])
	for i := 40; i < size; i++ {
		p[i] = byte(i)
	}
	return p
}

func TestOversizeFits(t *testing.T) {
	for _, p := range [][]byte{ipv4(1400, true, 6), ipv6(1400, 6), ipv4(9000, false, 17)} {
		if drop, reply := oversize(p, 0, false); drop || reply != nil {
			t.Errorf("MTU 0 (no limit) dropped a %d-byte packet", len(p))
		}
	}
	if drop, _ := oversize(ipv4(1400, true, 6), 1400, true); drop {
		t.Error("a packet of exactly the MTU was dropped")
	}
}

func TestFragNeeded(t *testing.T) {
	pkt := ipv4(1500, true, 6)
	drop, reply := oversize(pkt, 1400, false)
	if !drop || reply == nil {
		t.Fatalf("oversize DF packet: drop %v, reply %v", drop, reply != nil)
	}
	// The IP header: version 4, no options, length, ICMP, a valid
	// checksum, from the packet's destination back to its source.
	if reply[0] != 0x45 || int(binary.BigEndian.Uint16(reply[2:])) != len(reply) || reply[9] != protoICMP || reply[8] == 0 {
		t.Errorf("IP header % x", reply[:20])
	}
	if checksum(reply[:20], 0) != 0 {
		t.Error("bad IP header checksum")
	}
	if from, to := netip.AddrFrom4([4]byte(reply[12:16])), netip.AddrFrom4([4]byte(reply[16:20])); from != dst4 || to != src4 {
		t.Errorf("ICMP from %v to %v, want %v to %v", from, to, dst4, src4)
	}
	icmp := reply[20:]
	if icmp[0] != 3 || icmp[1] != 4 {
		t.Errorf("ICMP type %d code %d, want 3/4", icmp[0], icmp[1])
	}
	if mtu := binary.BigEndian.Uint16(icmp[6:]); mtu != 1400 || icmp[4] != 0 || icmp[5] != 0 {
		t.Errorf("next-hop MTU field % x, want 1400", icmp[4:8])
	}
	if checksum(icmp, 0) != 0 {
		t.Error("bad ICMP checksum")
	}
	// The quote: the original IP header and the first 8 bytes after it.
	if !bytes.Equal(icmp[8:], pkt[:28]) {
		t.Errorf("quote % x, want % x", icmp[8:], pkt[:28])
	}
	if len(reply) != 20+8+28 {
		t.Errorf("reply of %d bytes, want 56", len(reply))
	}

	// IP options are quoted too.
	opt := ipv4(1500, true, 6)
	opt[0] = 0x46
	_, reply = oversize(opt, 1400, false)
	if len(reply) != 20+8+24+8 || !bytes.Equal(reply[28:], opt[:32]) {
		t.Errorf("with options: reply of %d bytes", len(reply))
	}
	// A short packet is quoted as far as it goes.
	_, reply = oversize(ipv4(24, true, 6), 22, false)
	if len(reply) != 20+8+24 || checksum(reply[20:], 0) != 0 {
		t.Errorf("short packet: reply of %d bytes", len(reply))
	}
}

func TestOversizeDropped(t *testing.T) {
	icmpErr := ipv4(1500, true, protoICMP)
	icmpErr[20] = 11 // time exceeded
	icmpEcho := ipv4(1500, true, protoICMP)
	icmpEcho[20] = 8
	frag := ipv4(1500, true, 17)
	frag[7] = 10 // fragment offset 10
	mcast := ipv4(1500, true, 17)
	mcast[16] = 239
	zeroSrc := ipv4(1500, true, 17)
	copy(zeroSrc[12:16], []byte{0, 0, 0, 0})
	icmp6Err := ipv6(1500, protoICMPv6)
	icmp6Err[40] = 1 // destination unreachable
	icmp6Echo := ipv6(1500, protoICMPv6)
	icmp6Echo[40] = 128
	mcast6 := ipv6(1500, 17)
	mcast6[24] = 0xff

	for _, tc := range []struct {
		name      string
		pkt       []byte
		blackHole bool
		answered  bool
	}{
		{"IPv4 without DF", ipv4(1500, false, 6), false, false},
		{"IPv4 black hole", ipv4(1500, true, 6), true, false},
		{"IPv6 black hole", ipv6(1500, 6), true, false},
		{"ICMP error", icmpErr, false, false},
		{"ICMP echo", icmpEcho, false, true},
		{"non-first fragment", frag, false, false},
		{"multicast destination", mcast, false, false},
		{"source 0.0.0.0", zeroSrc, false, false},
		{"ICMPv6 error", icmp6Err, false, false},
		{"ICMPv6 echo", icmp6Echo, false, true},
		{"IPv6 multicast destination", mcast6, false, false},
		{"not IP", bytes.Repeat([]byte{0x20}, 1500), false, false},
		{"truncated IPv4", append([]byte{0x45}, make([]byte, 10)...), false, false},
	} {
		drop, reply := oversize(tc.pkt, 8, tc.blackHole)
		if !drop || (reply != nil) != tc.answered {
			t.Errorf("%s: drop %v, answered %v; want dropped, answered %v", tc.name, drop, reply != nil, tc.answered)
		}
	}
}

func TestPacketTooBig(t *testing.T) {
	pkt := ipv6(1500, 6)
	drop, reply := oversize(pkt, 1280, false)
	if !drop || reply == nil {
		t.Fatalf("oversize IPv6: drop %v, reply %v", drop, reply != nil)
	}
	// Never larger than the minimum IPv6 MTU.
	if len(reply) != 1280 {
		t.Errorf("reply of %d bytes, want 1280", len(reply))
	}
	if reply[0]>>4 != 6 || reply[6] != protoICMPv6 || reply[7] == 0 || int(binary.BigEndian.Uint16(reply[4:])) != len(reply)-40 {
		t.Errorf("IPv6 header % x", reply[:40])
	}
	if from, to := netip.AddrFrom16([16]byte(reply[8:24])), netip.AddrFrom16([16]byte(reply[24:40])); from != dst6 || to != src6 {
		t.Errorf("from %v to %v, want %v to %v", from, to, dst6, src6)
	}
	icmp := reply[40:]
	if icmp[0] != 2 || icmp[1] != 0 || binary.BigEndian.Uint32(icmp[4:]) != 1280 {
		t.Errorf("ICMPv6 header % x, want type 2 code 0 MTU 1280", icmp[:8])
	}
	if checksum(icmp, pseudoHeader6(reply[8:24], reply[24:40], len(icmp), protoICMPv6)) != 0 {
		t.Error("bad ICMPv6 checksum")
	}
	if !bytes.Equal(icmp[8:], pkt[:1280-48]) {
		t.Error("the quote is not the start of the packet")
	}
	// A packet shorter than the quote limit is quoted whole.
	small := ipv6(600, 17)
	_, reply = oversize(small, 500, false)
	if len(reply) != 48+600 || !bytes.Equal(reply[48:], small) {
		t.Errorf("small packet: reply of %d bytes", len(reply))
	}
}

func TestChecksum(t *testing.T) {
	// RFC 1071's example: the bytes 00 01 f2 03 f4 f5 f6 f7 sum to ddf2.
	if got := checksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0); got != ^uint16(0xddf2) {
		t.Errorf("checksum = %#04x, want %#04x", got, ^uint16(0xddf2))
	}
	// An odd length pads with a zero byte.
	if checksum([]byte{0xab}, 0) != ^uint16(0xab00) {
		t.Error("odd length")
	}
}
