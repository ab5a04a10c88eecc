package emulator

import (
	"encoding/binary"
	"testing"
)

// vnet builds a virtio-net header for a packet of ipLen bytes whose
// transport header starts at csumStart, with tcpHdr bytes of TCP header
// (0: not TCP).
func vnet(gsoType byte, gsoSize, csumStart, tcpHdr, ipLen int) []byte {
	b := make([]byte, vnetHdrLen+ipLen)
	b[1] = gsoType
	binary.NativeEndian.PutUint16(b[4:], uint16(gsoSize))
	binary.NativeEndian.PutUint16(b[6:], uint16(csumStart))
	if tcpHdr > 0 && vnetHdrLen+csumStart+12 < len(b) {
		b[vnetHdrLen+csumStart+12] = byte(tcpHdr/4) << 4
	}
	return b
}

// TestSuperCount checks what a packet read whole counts as: the segments
// the kernel would cut it into, each with the headers again.
func TestSuperCount(t *testing.T) {
	for _, tc := range []struct {
		name           string
		b              []byte
		packets, bytes int
		ok             bool
	}{
		{"single", vnet(vnetGSONone, 0, 0, 0, 1500), 1, 1500, true},
		// 10000 bytes of payload behind 20 + 32 bytes of headers, 1448 a
		// segment: 6 full and one of 1312.
		{"tcp4", vnet(vnetGSOTCPv4, 1448, 20, 32, 52+10000), 7, 52 + 10000 + 6*52, true},
		{"tcp4 exact", vnet(vnetGSOTCPv4, 1448, 20, 32, 52+2*1448), 2, 2 * (52 + 1448), true},
		{"tcp4 ecn", vnet(vnetGSOTCPv4|vnetGSOECN, 1448, 20, 32, 52+1449), 2, 52 + 1449 + 52, true},
		{"tcp6", vnet(vnetGSOTCPv6, 1428, 40, 32, 72+1429), 2, 72 + 1429 + 72, true},
		{"udp", vnet(vnetGSOUDPL4, 1472, 20, 0, 28+3*1472), 3, 3 * (28 + 1472), true},
		{"headers only", vnet(vnetGSOTCPv4, 1448, 20, 32, 52), 1, 52, true},
		{"short header", make([]byte, vnetHdrLen-1), 0, 0, false},
		{"truncated tcp", vnet(vnetGSOTCPv4, 1448, 20, 0, 30), 0, 0, false},
		{"unknown gso", vnet(3, 1448, 20, 32, 3000), 0, 0, false},
	} {
		packets, bytes, ok := superCount(tc.b)
		if packets != tc.packets || bytes != tc.bytes || ok != tc.ok {
			t.Errorf("%s: %d packets, %d bytes, ok %v; want %d, %d, %v", tc.name, packets, bytes, ok, tc.packets, tc.bytes, tc.ok)
		}
	}
}

// TestWholeFate checks which impairments let super-packets through whole:
// a delay only.
func TestWholeFate(t *testing.T) {
	if !wholeFate(Impairment{}) || !wholeFate(Impairment{Delay: 1}) {
		t.Error("no impairment, or a delay only: want whole")
	}
	for _, d := range []Impairment{
		{Loss: 0.01}, {GE: &GilbertElliott{P: 0.1}}, {Police: &Policer{Rate: 1}}, {Duplicate: 0.1},
		{Reorder: 0.1}, {Jitter: 1}, {Rate: 1}, {MTU: 1400},
	} {
		if wholeFate(d) {
			t.Errorf("%+v: want split", d)
		}
	}
}
