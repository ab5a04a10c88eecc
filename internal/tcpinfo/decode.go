package tcpinfo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// ErrShort reports kernel bytes too short to hold the structure being
// decoded: fewer than the 104 bytes every kernel's struct tcp_info has, or
// fewer than the 20 of struct tcp_bbr_info.
var ErrShort = errors.New("tcpinfo: kernel structure too short")

// Lengths of the kernel structures this package decodes.
const (
	// baseLen is struct tcp_info up to and including tcpi_total_retrans,
	// which every Linux kernel since 2.6 returns. Anything shorter is not
	// tcp_info.
	baseLen = 104
	// bbrInfoLen is struct tcp_bbr_info (Linux 4.9+).
	bbrInfoLen = 20
)

// Byte offsets in Linux's struct tcp_info (include/uapi/linux/tcp.h). The
// struct only ever grows at its end, so an offset, once published, is fixed;
// decode_linux_test.go checks every one against x/sys's unix.TCPInfo.
//
// Known end points: 232 bytes ends at tcpi_snd_wnd (Linux 5.4–6.1), 240 at
// tcpi_rehash (6.2), 248 at tcpi_total_rto_time (6.7), 280 after the AccECN
// counters (6.18).
const (
	offState       = 0
	offCAState     = 1
	offRetransmits = 2
	offProbes      = 3
	offBackoff     = 4
	offOptions     = 5
	// Byte 6 holds the bitfields tcpi_snd_wscale:4, tcpi_rcv_wscale:4 and
	// byte 7 tcpi_delivery_rate_app_limited:1, tcpi_fastopen_client_fail:2.
	// x/sys cannot express bitfields and leaves both bytes as padding.
	offWScale       = 6
	offRateFlags    = 7
	offRTO          = 8
	offATO          = 12
	offSndMSS       = 16
	offRcvMSS       = 20
	offUnacked      = 24
	offSacked       = 28
	offLost         = 32
	offRetrans      = 36
	offFackets      = 40
	offLastDataSent = 44
	// tcpi_last_ack_sent at 48 is never filled in by Linux.
	offLastDataRecv = 52
	offLastAckRecv  = 56
	offPMTU         = 60
	offRcvSsthresh  = 64
	offRTT          = 68
	offRTTVar       = 72
	offSndSsthresh  = 76
	offSndCwnd      = 80
	offAdvMSS       = 84
	offReordering   = 88
	offRcvRTT       = 92
	offRcvSpace     = 96
	offTotalRetrans = 100

	offPacingRate    = 104
	offMaxPacingRate = 112
	offBytesAcked    = 120
	offBytesReceived = 128
	offSegsOut       = 136
	offSegsIn        = 140
	offNotsentBytes  = 144
	offMinRTT        = 148
	offDataSegsIn    = 152
	offDataSegsOut   = 156
	offDeliveryRate  = 160
	offBusyTime      = 168
	offRwndLimited   = 176
	offSndbufLimited = 184
	offDelivered     = 192
	offDeliveredCE   = 196
	offBytesSent     = 200
	offBytesRetrans  = 208
	offDSACKDups     = 216
	offReordSeen     = 220
	offRcvOOOPack    = 224
	offSndWnd        = 228
	offRcvWnd        = 232
	offRehash        = 236
	offTotalRTO      = 240 // u16
	offTotalRTORecov = 242 // u16
	offTotalRTOTime  = 244
	offReceivedCE    = 248
	// The AccECN byte counters (252–275) and the tcpi_ecn_mode bitfield
	// word at 276 have no place in model.Sample yet.
)

// tcpi_options bits.
const (
	optTimestamps = 1 << 0
	optSACK       = 1 << 1
	optWScale     = 1 << 2
	optECN        = 1 << 3
	optECNSeen    = 1 << 4
	optSYNData    = 1 << 5
	optUSecTS     = 1 << 6
)

// infiniteSsthresh is TCP_INFINITE_SSTHRESH: ssthresh not yet set, the
// connection is still in its initial slow start.
const infiniteSsthresh = 0x7fffffff

// Decode converts the bytes of a Linux struct tcp_info, as the running
// kernel wrote them (host byte order), into a Sample. Fields that lie wholly
// inside b are present; fields beyond it are absent. b shorter than baseLen
// is an error wrapping ErrShort. The result's At is zero: the caller knows
// when the read happened.
func Decode(b []byte) (model.Sample, error) {
	return decode(b, hostBigEndian())
}

// decode is Decode for an explicit byte order, so recorded bytes from a
// little-endian machine decode the same on any host (the golden tests).
func decode(b []byte, bigEndian bool) (model.Sample, error) {
	if len(b) < baseLen {
		return model.Sample{}, fmt.Errorf("decode tcp_info: %d bytes, need at least %d: %w", len(b), baseLen, ErrShort)
	}
	f := newFields(b, bigEndian)
	s := model.Sample{
		KernelLen:   len(b),
		State:       model.TCPState(b[offState]),
		CAState:     model.CAState(b[offCAState]),
		Retransmits: b[offRetransmits],
		Probes:      b[offProbes],
		Backoff:     b[offBackoff],
		Options:     options(b[offOptions], b[offWScale], bigEndian),

		DeliveryRateAppLimited: bitfield(b[offRateFlags], 0, 1, bigEndian) != 0,

		RTO: usec(uint64(f.u32(offRTO))),
		ATO: usec(uint64(f.u32(offATO))),

		SndMSS: model.Bytes(f.u32(offSndMSS)),
		RcvMSS: model.Bytes(f.u32(offRcvMSS)),
		AdvMSS: model.Bytes(f.u32(offAdvMSS)),
		PMTU:   model.Bytes(f.u32(offPMTU)),

		Unacked: f.u32(offUnacked),
		Sacked:  f.u32(offSacked),
		Lost:    f.u32(offLost),
		Retrans: f.u32(offRetrans),
		Fackets: f.u32(offFackets),

		LastDataSent: msec(f.u32(offLastDataSent)),
		LastDataRecv: msec(f.u32(offLastDataRecv)),
		LastAckRecv:  msec(f.u32(offLastAckRecv)),

		RcvSsthresh:  model.Bytes(f.u32(offRcvSsthresh)),
		RTT:          usec(uint64(f.u32(offRTT))),
		RTTVar:       usec(uint64(f.u32(offRTTVar))),
		SndSsthresh:  f.u32(offSndSsthresh),
		SndCwnd:      f.u32(offSndCwnd),
		Reordering:   f.u32(offReordering),
		RcvRTT:       usec(uint64(f.u32(offRcvRTT))),
		RcvSpace:     model.Bytes(f.u32(offRcvSpace)),
		TotalRetrans: f.u32(offTotalRetrans),

		PacingRate:    f.pacing(offPacingRate),
		MaxPacingRate: f.pacing(offMaxPacingRate),
		BytesAcked:    f.bytes64(offBytesAcked),
		BytesReceived: f.bytes64(offBytesReceived),
		SegsOut:       f.opt32(offSegsOut),
		SegsIn:        f.opt32(offSegsIn),
		NotsentBytes:  f.bytes32(offNotsentBytes),
		MinRTT:        f.usec32(offMinRTT),
		DataSegsIn:    f.opt32(offDataSegsIn),
		DataSegsOut:   f.opt32(offDataSegsOut),
		DeliveryRate:  f.rate(offDeliveryRate),
		BusyTime:      f.usec64(offBusyTime),
		RwndLimited:   f.usec64(offRwndLimited),
		SndbufLimited: f.usec64(offSndbufLimited),
		Delivered:     f.opt32(offDelivered),
		DeliveredCE:   f.opt32(offDeliveredCE),
		BytesSent:     f.bytes64(offBytesSent),
		BytesRetrans:  f.bytes64(offBytesRetrans),
		DSACKDups:     f.opt32(offDSACKDups),
		ReordSeen:     f.opt32(offReordSeen),
		RcvOOOPack:    f.opt32(offRcvOOOPack),
		SndWnd:        f.bytes32(offSndWnd),
		RcvWnd:        f.bytes32(offRcvWnd),
		Rehash:        f.opt32(offRehash),

		TotalRTO:           f.opt16(offTotalRTO),
		TotalRTORecoveries: f.opt16(offTotalRTORecov),
		TotalRTOTime:       f.msec32(offTotalRTOTime),
		ReceivedCE:         f.opt32(offReceivedCE),
	}
	s.SsthreshInfinite = s.SndSsthresh >= infiniteSsthresh
	return s, nil
}

// DecodeBrief is Decode for the fields of a model.SampleBrief, at a
// fraction of its cost: a connection list decodes thousands of sockets
// and shows a few of their variables.
func DecodeBrief(b []byte) (model.SampleBrief, error) {
	return decodeBrief(b, hostBigEndian())
}

func decodeBrief(b []byte, bigEndian bool) (model.SampleBrief, error) {
	if len(b) < baseLen {
		return model.SampleBrief{}, fmt.Errorf("decode tcp_info: %d bytes, need at least %d: %w", len(b), baseLen, ErrShort)
	}
	f := newFields(b, bigEndian)
	return model.SampleBrief{
		State:         model.TCPState(b[offState]),
		RTT:           usec(uint64(f.u32(offRTT))),
		SndMSS:        model.Bytes(f.u32(offSndMSS)),
		SndCwnd:       f.u32(offSndCwnd),
		TotalRetrans:  f.u32(offTotalRetrans),
		BytesAcked:    f.bytes64(offBytesAcked),
		BytesReceived: f.bytes64(offBytesReceived),
		LastDataSent:  model.Some(msec(f.u32(offLastDataSent))),
		LastDataRecv:  model.Some(msec(f.u32(offLastDataRecv))),
	}, nil
}

// DecodeBBR converts struct tcp_bbr_info (TCP_CC_INFO or INET_DIAG_BBRINFO
// for a BBR socket, host byte order) into model units. Fewer than bbrInfoLen
// bytes is an error wrapping ErrShort.
func DecodeBBR(b []byte) (*model.BBRInfo, error) {
	return decodeBBR(b, hostBigEndian())
}

func decodeBBR(b []byte, bigEndian bool) (*model.BBRInfo, error) {
	if len(b) < bbrInfoLen {
		return nil, fmt.Errorf("decode tcp_bbr_info: %d bytes, need %d: %w", len(b), bbrInfoLen, ErrShort)
	}
	f := newFields(b, bigEndian)
	// The bandwidth estimate is a u64 in bytes/s split into two u32 halves
	// (bbr_bw_lo, bbr_bw_hi) because the uapi struct predates u64 alignment.
	bw := uint64(f.u32(4))<<32 | uint64(f.u32(0))
	return &model.BBRInfo{
		BW:     bytesPerSecond(bw),
		MinRTT: usec(uint64(f.u32(8))),
		// Gains are fixed point with 8 fractional bits (BBR_UNIT = 1<<8).
		PacingGain: float64(f.u32(12)) / 256,
		CwndGain:   float64(f.u32(16)) / 256,
	}, nil
}

// fields reads integers at fixed offsets of a kernel structure, answering
// "absent" for any field that does not fit wholly inside the bytes given.
type fields struct {
	b     []byte
	order binary.ByteOrder
}

func newFields(b []byte, bigEndian bool) fields {
	if bigEndian {
		return fields{b, binary.BigEndian}
	}
	return fields{b, binary.LittleEndian}
}

func (f fields) has(off, size int) bool { return off+size <= len(f.b) }

// u32 and u64 are for fields callers have already checked are present.
func (f fields) u32(off int) uint32 { return f.order.Uint32(f.b[off:]) }
func (f fields) u64(off int) uint64 { return f.order.Uint64(f.b[off:]) }

func (f fields) opt16(off int) model.Opt[uint32] {
	if !f.has(off, 2) {
		return model.Opt[uint32]{}
	}
	return model.Some(uint32(f.order.Uint16(f.b[off:])))
}

func (f fields) opt32(off int) model.Opt[uint32] {
	if !f.has(off, 4) {
		return model.Opt[uint32]{}
	}
	return model.Some(f.u32(off))
}

func (f fields) bytes32(off int) model.Opt[model.Bytes] {
	if !f.has(off, 4) {
		return model.Opt[model.Bytes]{}
	}
	return model.Some(model.Bytes(f.u32(off)))
}

func (f fields) bytes64(off int) model.Opt[model.Bytes] {
	if !f.has(off, 8) {
		return model.Opt[model.Bytes]{}
	}
	return model.Some(model.Bytes(min(f.u64(off), math.MaxInt64)))
}

func (f fields) usec32(off int) model.Opt[time.Duration] {
	if !f.has(off, 4) {
		return model.Opt[time.Duration]{}
	}
	return model.Some(usec(uint64(f.u32(off))))
}

func (f fields) usec64(off int) model.Opt[time.Duration] {
	if !f.has(off, 8) {
		return model.Opt[time.Duration]{}
	}
	return model.Some(usec(f.u64(off)))
}

func (f fields) msec32(off int) model.Opt[time.Duration] {
	if !f.has(off, 4) {
		return model.Opt[time.Duration]{}
	}
	return model.Some(msec(f.u32(off)))
}

func (f fields) rate(off int) model.Opt[model.Bitrate] {
	if !f.has(off, 8) {
		return model.Opt[model.Bitrate]{}
	}
	return model.Some(bytesPerSecond(f.u64(off)))
}

// pacing is a pacing rate, absent when the kernel reports "unlimited": ~0 as
// a u64, or ~0 as a u32 from the kernels whose sk_pacing_rate was 32 bits
// wide (a real rate of exactly 2³²−1 bytes/s is indistinguishable).
func (f fields) pacing(off int) model.Opt[model.Bitrate] {
	if !f.has(off, 8) {
		return model.Opt[model.Bitrate]{}
	}
	v := f.u64(off)
	if v == math.MaxUint64 || v == math.MaxUint32 {
		return model.Opt[model.Bitrate]{}
	}
	return model.Some(bytesPerSecond(v))
}

// options decodes tcpi_options and the window-scale bitfield byte.
func options(opts, wscale byte, bigEndian bool) model.Options {
	return model.Options{
		Timestamps:    opts&optTimestamps != 0,
		SACK:          opts&optSACK != 0,
		WindowScaling: opts&optWScale != 0,
		SndWScale:     int(bitfield(wscale, 0, 4, bigEndian)),
		RcvWScale:     int(bitfield(wscale, 4, 4, bigEndian)),
		ECN:           opts&optECN != 0,
		ECNSeen:       opts&optECNSeen != 0,
		SYNData:       opts&optSYNData != 0,
		USecTS:        opts&optUSecTS != 0,
	}
}

// bitfield extracts a C bitfield of width bits that starts pos bits into
// its byte in declaration order. C compilers allocate bitfields from the
// least significant bit on little-endian targets and from the most
// significant bit on big-endian ones, so the position depends on the ABI.
func bitfield(v byte, pos, width uint, bigEndian bool) byte {
	if bigEndian {
		pos = 8 - pos - width
	}
	return v >> pos & (1<<width - 1)
}

// usec converts a kernel microsecond count, saturating instead of wrapping
// for the u64 counters (busy_time grows for the life of a connection).
func usec(v uint64) time.Duration {
	if v > math.MaxInt64/uint64(time.Microsecond) {
		return math.MaxInt64
	}
	return time.Duration(v) * time.Microsecond
}

func msec(v uint32) time.Duration { return time.Duration(v) * time.Millisecond }

// bytesPerSecond converts a kernel rate in bytes/s to bit/s.
func bytesPerSecond(v uint64) model.Bitrate { return model.Bitrate(float64(v) * 8) }

// hostBigEndian reports the byte order the running kernel writes its
// structures in.
func hostBigEndian() bool {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 1)
	return b[0] == 0
}
