package emulator

import (
	"encoding/binary"
	"sync"
)

// superDevice is a Device that can also move packets as the kernel holds
// them: a virtio-net header (vnetHdrLen bytes), then an IP packet of up to
// 64 KiB, often a TCP or UDP super-packet (GSO) that stands for many
// MTU-sized ones. One read or write moves it whole: no segmentation, no
// checksums, no coalescing in userspace, one system call each way for up to
// 45 full-size segments. CreateTUN's devices with offloads are such
// devices.
type superDevice interface {
	Device
	readSuper(b []byte) (int, error)
	writeSuper(b []byte) error
}

// The virtio-net header (struct virtio_net_hdr, in the host's byte order
// on a TUN device without TUNSETVNETBE/LE): flags, gso_type, hdr_len,
// gso_size, csum_start, csum_offset.
const (
	vnetHdrLen     = 10
	vnetGSONone    = 0
	vnetGSOTCPv4   = 1
	vnetGSOUDPL4   = 5
	vnetGSOTCPv6   = 4
	vnetGSOECN     = 0x80 // ORed into gso_type: the segments carry ECN's CWR
	udpHeaderLen   = 8
	superSmallCopy = 2048 // a read this small is copied out of its 64 KiB buffer
)

// wholeFate reports whether d gives every packet the same fate whatever
// its size and wherever it falls in a super-packet: only a delay, which
// a super-packet can take as a unit. Loss, reordering and duplication
// decide per segment, a rate serializes each one and an MTU measures
// each one, so those directions split super-packets into packets as a
// wire would carry them.
func wholeFate(d Impairment) bool {
	return d.Loss == 0 && d.GE == nil && d.Police == nil && d.Duplicate == 0 &&
		d.Reorder == 0 && d.Jitter == 0 && d.Rate == 0 && d.MTU == 0
}

// superCount is what a packet read whole (virtio-net header first) counts
// as: the packets on the wire that the kernel's segmentation would make of
// it and their bytes, each segment carrying the headers again. ok is false
// for a header the kernel would not have written.
func superCount(b []byte) (packets, bytes int, ok bool) {
	if len(b) < vnetHdrLen {
		return 0, 0, false
	}
	ip := b[vnetHdrLen:]
	gsoType, gsoSize := b[1]&^vnetGSOECN, int(binary.NativeEndian.Uint16(b[4:]))
	csumStart := int(binary.NativeEndian.Uint16(b[6:]))
	if gsoType == vnetGSONone || gsoSize == 0 {
		return 1, len(ip), true
	}
	// hdr_len is not trusted (the kernel may set it to the whole first
	// segment): the headers end after the transport header, which starts
	// at csum_start.
	var hdr int
	switch gsoType {
	case vnetGSOTCPv4, vnetGSOTCPv6:
		if len(ip) <= csumStart+12 {
			return 0, 0, false
		}
		hdr = csumStart + int(ip[csumStart+12]>>4)*4
	case vnetGSOUDPL4:
		hdr = csumStart + udpHeaderLen
	default:
		return 0, 0, false
	}
	payload := len(ip) - hdr
	if payload <= 0 {
		return 1, len(ip), true
	}
	packets = (payload + gsoSize - 1) / gsoSize
	return packets, len(ip) + (packets-1)*hdr, true
}

// superPool holds the buffers whole packets are read into: big enough for
// a header and the largest IP packet.
var superPool = sync.Pool{New: func() any {
	return &packet{b: make([]byte, vnetHdrLen+maxPacket)}
}}
