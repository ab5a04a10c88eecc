package watch

import (
	"encoding/json"
	"math"
	"net/netip"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tcpscope/tcpscope/internal/model"
)

// This file writes a Frame as encoding/json does, byte for byte, without
// reflection: following one connection at 100 Hz, encoding/json was 40%
// of the watcher's user time. The tests hold it to encoding/json's output
// for frames of every shape. A field added to Frame, Row, model.Socket or
// model.Sample must be added here too; the tests fail until it is.
//
// The rules followed are encoding/json's: fields in declaration order
// (an embedded struct's in its place), omitempty dropping false, 0, ""
// and empty slices, omitzero dropping what IsZero reports zero, strings
// escaped for HTML, and floats in the shortest form, in exponent form
// below 1e-6 and from 1e21 up. A NaN or an infinity is an error, as it is
// for encoding/json. The diagnosis is left to encoding/json itself: it
// is recomputed twice a second, and a Recorder encodes it once for all the
// frames that carry it.

// appendFrame appends f as one JSON object, without a newline. diag is
// f.Diagnosis already encoded, or nil to encode it here.
func appendFrame(b []byte, f *Frame, diag []byte) ([]byte, error) {
	e := encoder{b: b}
	e.raw(`{"at_ns":`)
	e.int(int64(f.At))
	e.raw(`,"connections":`)
	e.rows(f.Rows)
	if len(f.Closed) > 0 {
		e.raw(`,"closed":`)
		e.rows(f.Closed)
	}
	if len(f.Diagnosis) > 0 {
		if diag == nil {
			var err error
			if diag, err = json.Marshal(f.Diagnosis); err != nil {
				return b, err
			}
		}
		e.raw(`,"diagnosis":`)
		e.b = append(e.b, diag...)
	}
	e.raw("}")
	if e.err != nil {
		return b, e.err
	}
	return e.b, nil
}

// encoder appends JSON to b; the first unsupported value is kept in err.
type encoder struct {
	b   []byte
	err error
}

func (e *encoder) raw(s string) { e.b = append(e.b, s...) }

func (e *encoder) int(v int64) { e.b = strconv.AppendInt(e.b, v, 10) }

func (e *encoder) uint(v uint64) { e.b = strconv.AppendUint(e.b, v, 10) }

func (e *encoder) bool(v bool) { e.b = strconv.AppendBool(e.b, v) }

// float writes v as encoding/json does.
func (e *encoder) float(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		if e.err == nil {
			e.err = &json.UnsupportedValueError{Str: strconv.FormatFloat(v, 'g', -1, 64)}
		}
		e.raw("0")
		return
	}
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, v, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9.
		if n := len(e.b); n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
}

const hexDigits = "0123456789abcdef"

// string writes s quoted, escaped as encoding/json does with HTML
// escaping (json.Encoder's default).
func (e *encoder) string(s string) { e.b = appendString(e.b, s) }

func appendString[S []byte | string](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune([]byte(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}

// addrPort writes a as its MarshalText does, quoted.
func (e *encoder) addrPort(a netip.AddrPort) {
	var buf [64]byte
	e.b = appendString(e.b, a.AppendTo(buf[:0]))
}

func (e *encoder) rows(rows []Row) {
	if rows == nil {
		e.raw("null")
		return
	}
	e.raw("[")
	for i := range rows {
		if i > 0 {
			e.raw(",")
		}
		e.row(&rows[i])
	}
	e.raw("]")
}

func (e *encoder) row(r *Row) {
	e.raw(`{"local":`)
	e.addrPort(r.Local)
	e.raw(`,"remote":`)
	e.addrPort(r.Remote)
	if r.IPv6 {
		e.raw(`,"ipv6":true`)
	}
	e.raw(`,"cookie":`)
	e.uint(r.Cookie)
	e.raw(`,"inode":`)
	e.uint(uint64(r.Inode))
	e.raw(`,"uid":`)
	e.uint(uint64(r.UID))
	if r.PID != 0 {
		e.raw(`,"pid":`)
		e.int(int64(r.PID))
	}
	if r.Process != "" {
		e.raw(`,"process":`)
		e.string(r.Process)
	}
	e.raw(`,"tcp":`)
	e.sample(&r.TCP)
	e.raw(`,"sending":`)
	e.bool(r.Sending)
	e.raw(`,"rate":`)
	e.float(float64(r.Rate))
	e.raw(`,"retrans":`)
	e.uint(uint64(r.Retrans))
	if l, ok := r.Limited.Get(); ok {
		e.raw(`,"limited":{"rwnd":`)
		e.float(l.Rwnd)
		e.raw(`,"sndbuf":`)
		e.float(l.Sndbuf)
		e.raw(`,"cwnd":`)
		e.float(l.Cwnd)
		e.raw(`,"app":`)
		e.float(l.App)
		e.raw("}")
	}
	if r.New {
		e.raw(`,"new":true`)
	}
	e.raw("}")
}

func (e *encoder) sample(s *model.Sample) {
	e.raw(`{"at_ns":`)
	e.int(int64(s.At))
	e.raw(`,"kernel_len":`)
	e.int(int64(s.KernelLen))
	e.raw(`,"state":`)
	e.string(s.State.String())
	e.raw(`,"ca_state":`)
	e.string(s.CAState.String())
	e.raw(`,"retransmits":`)
	e.uint(uint64(s.Retransmits))
	e.raw(`,"probes":`)
	e.uint(uint64(s.Probes))
	e.raw(`,"backoff":`)
	e.uint(uint64(s.Backoff))
	o := &s.Options
	e.raw(`,"options":{"sack":`)
	e.bool(o.SACK)
	e.raw(`,"timestamps":`)
	e.bool(o.Timestamps)
	e.raw(`,"window_scaling":`)
	e.bool(o.WindowScaling)
	e.raw(`,"snd_wscale":`)
	e.int(int64(o.SndWScale))
	e.raw(`,"rcv_wscale":`)
	e.int(int64(o.RcvWScale))
	e.raw(`,"ecn":`)
	e.bool(o.ECN)
	e.raw(`,"ecn_seen":`)
	e.bool(o.ECNSeen)
	e.raw(`,"syn_data":`)
	e.bool(o.SYNData)
	e.raw(`,"usec_ts":`)
	e.bool(o.USecTS)
	e.raw(`},"delivery_rate_app_limited":`)
	e.bool(s.DeliveryRateAppLimited)
	e.raw(`,"rto_ns":`)
	e.int(int64(s.RTO))
	e.raw(`,"ato_ns":`)
	e.int(int64(s.ATO))
	e.raw(`,"snd_mss":`)
	e.int(int64(s.SndMSS))
	e.raw(`,"rcv_mss":`)
	e.int(int64(s.RcvMSS))
	e.raw(`,"advmss":`)
	e.int(int64(s.AdvMSS))
	e.raw(`,"pmtu":`)
	e.int(int64(s.PMTU))
	e.raw(`,"unacked":`)
	e.uint(uint64(s.Unacked))
	e.raw(`,"sacked":`)
	e.uint(uint64(s.Sacked))
	e.raw(`,"lost":`)
	e.uint(uint64(s.Lost))
	e.raw(`,"retrans":`)
	e.uint(uint64(s.Retrans))
	e.raw(`,"fackets":`)
	e.uint(uint64(s.Fackets))
	e.raw(`,"last_data_sent_ns":`)
	e.int(int64(s.LastDataSent))
	e.raw(`,"last_data_recv_ns":`)
	e.int(int64(s.LastDataRecv))
	e.raw(`,"last_ack_recv_ns":`)
	e.int(int64(s.LastAckRecv))
	e.raw(`,"rcv_ssthresh":`)
	e.int(int64(s.RcvSsthresh))
	e.raw(`,"rtt_ns":`)
	e.int(int64(s.RTT))
	e.raw(`,"rttvar_ns":`)
	e.int(int64(s.RTTVar))
	e.raw(`,"snd_ssthresh":`)
	e.uint(uint64(s.SndSsthresh))
	e.raw(`,"ssthresh_infinite":`)
	e.bool(s.SsthreshInfinite)
	e.raw(`,"snd_cwnd":`)
	e.uint(uint64(s.SndCwnd))
	e.raw(`,"reordering":`)
	e.uint(uint64(s.Reordering))
	e.raw(`,"rcv_rtt_ns":`)
	e.int(int64(s.RcvRTT))
	e.raw(`,"rcv_space":`)
	e.int(int64(s.RcvSpace))
	e.raw(`,"total_retrans":`)
	e.uint(uint64(s.TotalRetrans))
	optRate(e, `,"pacing_rate":`, s.PacingRate)
	optRate(e, `,"max_pacing_rate":`, s.MaxPacingRate)
	optInt(e, `,"bytes_acked":`, s.BytesAcked)
	optInt(e, `,"bytes_received":`, s.BytesReceived)
	optInt(e, `,"segs_out":`, s.SegsOut)
	optInt(e, `,"segs_in":`, s.SegsIn)
	optInt(e, `,"notsent_bytes":`, s.NotsentBytes)
	optInt(e, `,"min_rtt_ns":`, s.MinRTT)
	optInt(e, `,"data_segs_in":`, s.DataSegsIn)
	optInt(e, `,"data_segs_out":`, s.DataSegsOut)
	optRate(e, `,"delivery_rate":`, s.DeliveryRate)
	optInt(e, `,"busy_time_ns":`, s.BusyTime)
	optInt(e, `,"rwnd_limited_ns":`, s.RwndLimited)
	optInt(e, `,"sndbuf_limited_ns":`, s.SndbufLimited)
	optInt(e, `,"delivered":`, s.Delivered)
	optInt(e, `,"delivered_ce":`, s.DeliveredCE)
	optInt(e, `,"bytes_sent":`, s.BytesSent)
	optInt(e, `,"bytes_retrans":`, s.BytesRetrans)
	optInt(e, `,"dsack_dups":`, s.DSACKDups)
	optInt(e, `,"reord_seen":`, s.ReordSeen)
	optInt(e, `,"rcv_ooopack":`, s.RcvOOOPack)
	optInt(e, `,"snd_wnd":`, s.SndWnd)
	optInt(e, `,"rcv_wnd":`, s.RcvWnd)
	optInt(e, `,"rehash":`, s.Rehash)
	optInt(e, `,"total_rto":`, s.TotalRTO)
	optInt(e, `,"total_rto_recoveries":`, s.TotalRTORecoveries)
	optInt(e, `,"total_rto_time_ns":`, s.TotalRTOTime)
	optInt(e, `,"received_ce":`, s.ReceivedCE)
	optInt(e, `,"recv_q":`, s.RecvQ)
	optInt(e, `,"send_q":`, s.SendQ)
	optInt(e, `,"sndbuf":`, s.SndBuf)
	if s.Congestion != "" {
		e.raw(`,"congestion":`)
		e.string(s.Congestion)
	}
	if s.BBR != nil {
		e.raw(`,"bbr":{"bw":`)
		e.float(float64(s.BBR.BW))
		e.raw(`,"min_rtt_ns":`)
		e.int(int64(s.BBR.MinRTT))
		e.raw(`,"pacing_gain":`)
		e.float(s.BBR.PacingGain)
		e.raw(`,"cwnd_gain":`)
		e.float(s.BBR.CwndGain)
		e.raw("}")
	}
	e.raw("}")
}

// optInt writes an integer Opt field (omitzero: only when present).
func optInt[T uint32 | model.Bytes | time.Duration](e *encoder, key string, o model.Opt[T]) {
	if !o.OK {
		return
	}
	e.raw(key)
	e.int(int64(o.V))
}

// optRate writes a rate Opt field (omitzero: only when present).
func optRate(e *encoder, key string, o model.Opt[model.Bitrate]) {
	if !o.OK {
		return
	}
	e.raw(key)
	e.float(float64(o.V))
}
