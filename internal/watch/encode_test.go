package watch

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Values the random frames are made of: the edges of encoding/json's
// rules among them.
var (
	tryStrings = []string{"", "cubic", "bbr", "iperf3", "a<b>&c", `quote" and \ back`, "tab\tnew\nline\r\b\f",
		"\x00\x01\x1f\x7f", "naïve 日本", "\xff\xfe bad \xc3", "line\u2028sep\u2029", "é\u00a0\ufeff", "\U0001F600"}
	tryFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 123.456, 9.41e9, 1e-6, 9.99e-7, 1e-7, 5e-324,
		1e20, 1e21, 1.5e21, -2e22, math.MaxFloat64, 0.30000000000000004, 1.0 / 3}
	tryAddrs = []netip.AddrPort{{}, netip.MustParseAddrPort("127.0.0.1:5201"), netip.MustParseAddrPort("[2001:db8::1]:22"),
		netip.MustParseAddrPort("[::ffff:10.0.0.1]:80"), netip.MustParseAddrPort("[fe80::1%eth<0>]:443"),
		netip.AddrPortFrom(netip.IPv4Unspecified(), 0)}
)

// fill sets v, of any type a frame holds, to random values: every field
// of every struct, so a field the encoder misses shows.
func fill(r *rand.Rand, v reflect.Value, special float64) {
	switch v.Interface().(type) {
	case netip.AddrPort:
		v.Set(reflect.ValueOf(tryAddrs[r.IntN(len(tryAddrs))]))
		return
	case []model.Finding:
		if r.IntN(3) == 0 {
			f := model.Finding{ID: "rwnd-limited", Summary: "the <receiver's> window", Evidence: []model.Evidence{{What: "a & b", Value: "1"}}}
			if r.IntN(2) == 0 {
				f.Predicted = model.Some(model.Bitrate(tryFloats[r.IntN(len(tryFloats))]))
			}
			v.Set(reflect.ValueOf([]model.Finding{f}))
		}
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		switch r.IntN(4) {
		case 0:
			v.SetInt(0)
		case 1:
			v.SetInt(-r.Int64N(1000))
		default:
			v.SetInt(r.Int64() >> (r.IntN(64)))
		}
		if v.OverflowInt(v.Int()) {
			v.SetInt(int64(r.IntN(100)))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u := r.Uint64() >> r.IntN(64)
		if r.IntN(4) == 0 {
			u = 0
		}
		if v.OverflowUint(u) {
			u &= 1<<(8*v.Type().Size()) - 1
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		f := tryFloats[r.IntN(len(tryFloats))]
		if r.IntN(2) == 0 {
			f = r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
		}
		if special != 0 && r.IntN(20) == 0 {
			f = special
		}
		v.SetFloat(f)
	case reflect.String:
		v.SetString(tryStrings[r.IntN(len(tryStrings))])
	case reflect.Pointer:
		if r.IntN(2) == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem(), special)
		v.Set(p)
	case reflect.Slice:
		switch r.IntN(4) {
		case 0:
			v.Set(reflect.Zero(v.Type())) // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0)) // empty, not nil
		default:
			s := reflect.MakeSlice(v.Type(), 1+r.IntN(2), 3)
			for i := range s.Len() {
				fill(r, s.Index(i), special)
			}
			v.Set(s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i), special)
			}
		}
	default:
		panic("fill: a " + v.Type().String() + " in a frame")
	}
}

// The frame encoder writes what encoding/json's Encoder writes, for
// frames of every shape: nil and empty rows, closed connections, absent
// and present optional fields, BBR or not, a diagnosis or not, strings to
// escape, floats at the edges of the exponent form; and both refuse a NaN
// or an infinity.
func TestEncodeLikeEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 3000 {
		special := 0.0
		if i%10 == 9 {
			special = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[i/10%3]
		}
		var f Frame
		fill(r, reflect.ValueOf(&f).Elem(), special)
		var want bytes.Buffer
		werr := json.NewEncoder(&want).Encode(f)
		var got bytes.Buffer
		gerr := NewRecorder(&got).Write(f)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("frame %d: encoding/json: %v, ours: %v", i, werr, gerr)
		}
		if werr != nil {
			if !strings.Contains(gerr.Error(), "unsupported value") {
				t.Errorf("frame %d: %v", i, gerr)
			}
			continue
		}
		if got.String() != want.String() {
			g, w := got.String(), want.String()
			at := 0
			for at < min(len(g), len(w)) && g[at] == w[at] {
				at++
			}
			t.Fatalf("frame %d differs at byte %d:\nours:          %.200q\nencoding/json: %.200q", i, at, g[max(at-60, 0):], w[max(at-60, 0):])
		}
	}
}

// liveFrame is a frame as a live watch makes it: one followed
// connection's second sample, and one closed.
func liveFrame() Frame {
	var tr Tracker
	s := sock(42, 0, 0, 0)
	s.Local, s.Remote, s.Process, s.PID = tryAddrs[1], tryAddrs[2], "iperf3", 4711
	s.TCP.Congestion = "bbr"
	tr.Add(0, []model.Socket{s})
	s.TCP.At, s.TCP.BytesAcked = time.Second, model.Some[model.Bytes](1e6)
	s.TCP.BusyTime, s.TCP.RwndLimited, s.TCP.SndbufLimited = model.Some(time.Second), model.Some(time.Duration(0)), model.Some(time.Duration(0))
	s.TCP.BBR = &model.BBRInfo{BW: 1e9, MinRTT: time.Millisecond, PacingGain: 2.885, CwndGain: 2}
	f := tr.Add(time.Second, []model.Socket{s})
	f.Closed = []Row{{Socket: sock(7, 0, 0, 0)}}
	return f
}

// A frame as a live watch makes it encodes the same too.
func TestEncodeLiveFrame(t *testing.T) {
	f := liveFrame()
	var want, got bytes.Buffer
	if err := json.NewEncoder(&want).Encode(f); err != nil {
		t.Fatal(err)
	}
	if err := NewRecorder(&got).Write(f); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("ours:\n%s\nencoding/json:\n%s", got.String(), want.String())
	}
}

// Frames between two recomputations of the diagnosis share its findings,
// encoded once by the Recorder: each line is still encoding/json's, and a
// new diagnosis, even of the same length, is encoded anew.
func TestRecordSharedDiagnosis(t *testing.T) {
	f := liveFrame()
	d1 := []model.Finding{{ID: "rwnd-limited", Summary: "the receiver's window"}}
	d2 := []model.Finding{{ID: "loss-limited", Summary: "loss"}}
	var got, want bytes.Buffer
	rec, enc := NewRecorder(&got), json.NewEncoder(&want)
	for i, d := range [][]model.Finding{nil, d1, d1, d1, d2, d2, nil, d1} {
		f.At, f.Diagnosis = time.Duration(i)*time.Second, d
		if err := rec.Write(f); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	if got.String() != want.String() {
		t.Errorf("ours:\n%s\nencoding/json:\n%s", got.String(), want.String())
	}
}

// BenchmarkRecordFrame writes a followed connection's frame, as
// --json-stream does a hundred times a second.
func BenchmarkRecordFrame(b *testing.B) {
	f := liveFrame()
	rec := NewRecorder(io.Discard)
	for b.Loop() {
		if err := rec.Write(f); err != nil {
			b.Fatal(err)
		}
	}
}
