package tcpinfo

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/tcpscope/tcpscope/internal/golden"

	"golang.org/x/sys/unix"

	"github.com/tcpscope/tcpscope/internal/model"
)

// TestOffsetsMatchXSys checks every offset the decoder uses against the
// layout x/sys generated from the kernel headers.
func TestOffsetsMatchXSys(t *testing.T) {
	var x unix.TCPInfo
	cases := []struct {
		name string
		ours int
		xsys uintptr
	}{
		{"State", offState, unsafe.Offsetof(x.State)},
		{"Ca_state", offCAState, unsafe.Offsetof(x.Ca_state)},
		{"Retransmits", offRetransmits, unsafe.Offsetof(x.Retransmits)},
		{"Probes", offProbes, unsafe.Offsetof(x.Probes)},
		{"Backoff", offBackoff, unsafe.Offsetof(x.Backoff)},
		{"Options", offOptions, unsafe.Offsetof(x.Options)},
		// The two bitfield bytes follow Options; x/sys leaves them as padding.
		{"(wscale bitfield)", offWScale, unsafe.Offsetof(x.Options) + 1},
		{"(rate flags bitfield)", offRateFlags, unsafe.Offsetof(x.Options) + 2},
		{"Rto", offRTO, unsafe.Offsetof(x.Rto)},
		{"Ato", offATO, unsafe.Offsetof(x.Ato)},
		{"Snd_mss", offSndMSS, unsafe.Offsetof(x.Snd_mss)},
		{"Rcv_mss", offRcvMSS, unsafe.Offsetof(x.Rcv_mss)},
		{"Unacked", offUnacked, unsafe.Offsetof(x.Unacked)},
		{"Sacked", offSacked, unsafe.Offsetof(x.Sacked)},
		{"Lost", offLost, unsafe.Offsetof(x.Lost)},
		{"Retrans", offRetrans, unsafe.Offsetof(x.Retrans)},
		{"Fackets", offFackets, unsafe.Offsetof(x.Fackets)},
		{"Last_data_sent", offLastDataSent, unsafe.Offsetof(x.Last_data_sent)},
		{"Last_data_recv", offLastDataRecv, unsafe.Offsetof(x.Last_data_recv)},
		{"Last_ack_recv", offLastAckRecv, unsafe.Offsetof(x.Last_ack_recv)},
		{"Pmtu", offPMTU, unsafe.Offsetof(x.Pmtu)},
		{"Rcv_ssthresh", offRcvSsthresh, unsafe.Offsetof(x.Rcv_ssthresh)},
		{"Rtt", offRTT, unsafe.Offsetof(x.Rtt)},
		{"Rttvar", offRTTVar, unsafe.Offsetof(x.Rttvar)},
		{"Snd_ssthresh", offSndSsthresh, unsafe.Offsetof(x.Snd_ssthresh)},
		{"Snd_cwnd", offSndCwnd, unsafe.Offsetof(x.Snd_cwnd)},
		{"Advmss", offAdvMSS, unsafe.Offsetof(x.Advmss)},
		{"Reordering", offReordering, unsafe.Offsetof(x.Reordering)},
		{"Rcv_rtt", offRcvRTT, unsafe.Offsetof(x.Rcv_rtt)},
		{"Rcv_space", offRcvSpace, unsafe.Offsetof(x.Rcv_space)},
		{"Total_retrans", offTotalRetrans, unsafe.Offsetof(x.Total_retrans)},
		{"(base length)", baseLen, unsafe.Offsetof(x.Total_retrans) + unsafe.Sizeof(x.Total_retrans)},
		{"Pacing_rate", offPacingRate, unsafe.Offsetof(x.Pacing_rate)},
		{"Max_pacing_rate", offMaxPacingRate, unsafe.Offsetof(x.Max_pacing_rate)},
		{"Bytes_acked", offBytesAcked, unsafe.Offsetof(x.Bytes_acked)},
		{"Bytes_received", offBytesReceived, unsafe.Offsetof(x.Bytes_received)},
		{"Segs_out", offSegsOut, unsafe.Offsetof(x.Segs_out)},
		{"Segs_in", offSegsIn, unsafe.Offsetof(x.Segs_in)},
		{"Notsent_bytes", offNotsentBytes, unsafe.Offsetof(x.Notsent_bytes)},
		{"Min_rtt", offMinRTT, unsafe.Offsetof(x.Min_rtt)},
		{"Data_segs_in", offDataSegsIn, unsafe.Offsetof(x.Data_segs_in)},
		{"Data_segs_out", offDataSegsOut, unsafe.Offsetof(x.Data_segs_out)},
		{"Delivery_rate", offDeliveryRate, unsafe.Offsetof(x.Delivery_rate)},
		{"Busy_time", offBusyTime, unsafe.Offsetof(x.Busy_time)},
		{"Rwnd_limited", offRwndLimited, unsafe.Offsetof(x.Rwnd_limited)},
		{"Sndbuf_limited", offSndbufLimited, unsafe.Offsetof(x.Sndbuf_limited)},
		{"Delivered", offDelivered, unsafe.Offsetof(x.Delivered)},
		{"Delivered_ce", offDeliveredCE, unsafe.Offsetof(x.Delivered_ce)},
		{"Bytes_sent", offBytesSent, unsafe.Offsetof(x.Bytes_sent)},
		{"Bytes_retrans", offBytesRetrans, unsafe.Offsetof(x.Bytes_retrans)},
		{"Dsack_dups", offDSACKDups, unsafe.Offsetof(x.Dsack_dups)},
		{"Reord_seen", offReordSeen, unsafe.Offsetof(x.Reord_seen)},
		{"Rcv_ooopack", offRcvOOOPack, unsafe.Offsetof(x.Rcv_ooopack)},
		{"Snd_wnd", offSndWnd, unsafe.Offsetof(x.Snd_wnd)},
		{"Rcv_wnd", offRcvWnd, unsafe.Offsetof(x.Rcv_wnd)},
		{"Rehash", offRehash, unsafe.Offsetof(x.Rehash)},
		{"Total_rto", offTotalRTO, unsafe.Offsetof(x.Total_rto)},
		{"Total_rto_recoveries", offTotalRTORecov, unsafe.Offsetof(x.Total_rto_recoveries)},
		{"Total_rto_time", offTotalRTOTime, unsafe.Offsetof(x.Total_rto_time)},
		{"Received_ce", offReceivedCE, unsafe.Offsetof(x.Received_ce)},
	}
	for _, c := range cases {
		if uintptr(c.ours) != c.xsys {
			t.Errorf("%s: decoder uses offset %d, x/sys has %d", c.name, c.ours, c.xsys)
		}
	}
	var bbr unix.TCPBBRInfo
	if unsafe.Sizeof(bbr) != bbrInfoLen {
		t.Errorf("struct tcp_bbr_info is %d bytes in x/sys, decoder expects %d", unsafe.Sizeof(bbr), bbrInfoLen)
	}
}

// TestDecodeXSysStruct fills every field of x/sys's TCPInfo with a distinct
// value, decodes its bytes with Decode (host order) and checks that each
// value lands in the right Sample field, converted to the right unit.
func TestDecodeXSysStruct(t *testing.T) {
	var x unix.TCPInfo
	v := reflect.ValueOf(&x).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue // trailing padding
		}
		// Distinct, and far from the special values (~0, infinite ssthresh).
		f.SetUint(uint64(i+1) * map[reflect.Kind]uint64{reflect.Uint8: 1, reflect.Uint16: 10, reflect.Uint32: 1000, reflect.Uint64: 1_000_000}[f.Kind()])
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&x)), unsafe.Sizeof(x))
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	us := func(v uint64) time.Duration { return time.Duration(v) * time.Microsecond }
	ms := func(v uint32) time.Duration { return time.Duration(v) * time.Millisecond }
	rate := func(v uint64) model.Bitrate { return model.Bitrate(v * 8) }
	want := model.Sample{
		KernelLen:     int(unsafe.Sizeof(x)),
		State:         model.TCPState(x.State),
		CAState:       model.CAState(x.Ca_state),
		Retransmits:   x.Retransmits,
		Probes:        x.Probes,
		Backoff:       x.Backoff,
		Options:       options(x.Options, 0, false),
		RTO:           us(uint64(x.Rto)),
		ATO:           us(uint64(x.Ato)),
		SndMSS:        model.Bytes(x.Snd_mss),
		RcvMSS:        model.Bytes(x.Rcv_mss),
		AdvMSS:        model.Bytes(x.Advmss),
		PMTU:          model.Bytes(x.Pmtu),
		Unacked:       x.Unacked,
		Sacked:        x.Sacked,
		Lost:          x.Lost,
		Retrans:       x.Retrans,
		Fackets:       x.Fackets,
		LastDataSent:  ms(x.Last_data_sent),
		LastDataRecv:  ms(x.Last_data_recv),
		LastAckRecv:   ms(x.Last_ack_recv),
		RcvSsthresh:   model.Bytes(x.Rcv_ssthresh),
		RTT:           us(uint64(x.Rtt)),
		RTTVar:        us(uint64(x.Rttvar)),
		SndSsthresh:   x.Snd_ssthresh,
		SndCwnd:       x.Snd_cwnd,
		Reordering:    x.Reordering,
		RcvRTT:        us(uint64(x.Rcv_rtt)),
		RcvSpace:      model.Bytes(x.Rcv_space),
		TotalRetrans:  x.Total_retrans,
		PacingRate:    model.Some(rate(x.Pacing_rate)),
		MaxPacingRate: model.Some(rate(x.Max_pacing_rate)),
		BytesAcked:    model.Some(model.Bytes(x.Bytes_acked)),
		BytesReceived: model.Some(model.Bytes(x.Bytes_received)),
		SegsOut:       model.Some(x.Segs_out),
		SegsIn:        model.Some(x.Segs_in),
		NotsentBytes:  model.Some(model.Bytes(x.Notsent_bytes)),
		MinRTT:        model.Some(us(uint64(x.Min_rtt))),
		DataSegsIn:    model.Some(x.Data_segs_in),
		DataSegsOut:   model.Some(x.Data_segs_out),
		DeliveryRate:  model.Some(rate(x.Delivery_rate)),
		BusyTime:      model.Some(us(x.Busy_time)),
		RwndLimited:   model.Some(us(x.Rwnd_limited)),
		SndbufLimited: model.Some(us(x.Sndbuf_limited)),
		Delivered:     model.Some(x.Delivered),
		DeliveredCE:   model.Some(x.Delivered_ce),
		BytesSent:     model.Some(model.Bytes(x.Bytes_sent)),
		BytesRetrans:  model.Some(model.Bytes(x.Bytes_retrans)),
		DSACKDups:     model.Some(x.Dsack_dups),
		ReordSeen:     model.Some(x.Reord_seen),
		RcvOOOPack:    model.Some(x.Rcv_ooopack),
		SndWnd:        model.Some(model.Bytes(x.Snd_wnd)),
		RcvWnd:        model.Some(model.Bytes(x.Rcv_wnd)),
		Rehash:        model.Some(x.Rehash),

		TotalRTO:           model.Some(uint32(x.Total_rto)),
		TotalRTORecoveries: model.Some(uint32(x.Total_rto_recoveries)),
		TotalRTOTime:       model.Some(ms(x.Total_rto_time)),
		ReceivedCE:         model.Some(x.Received_ce),
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "\t")
		w, _ := json.MarshalIndent(want, "", "\t")
		t.Errorf("Decode of x/sys struct differs (-want +got):\n%s", golden.Diff(string(w), string(g)))
	}
}
