package tcpinfo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// recorded are the tcp_info captures in testdata (see TestRecord). They come
// from a little-endian machine, so they are decoded as little-endian here,
// whatever the host.
var recorded = []string{"sender", "receiver"}

// cuts are struct lengths of real kernels (see the offsets in decode.go),
// plus 160 (mid-way, Linux 4.6-ish), to show that absent means absent.
var cuts = []int{baseLen, 160, 232, 240, 248}

func TestDecodeGolden(t *testing.T) {
	for _, name := range recorded {
		b := readHex(t, filepath.Join("testdata", name+".hex"))
		t.Run(name, func(t *testing.T) {
			s, err := decode(b, false)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", name+".golden"), s)
		})
		for _, n := range cuts {
			t.Run(fmt.Sprintf("%s-%d", name, n), func(t *testing.T) {
				s, err := decode(b[:n], false)
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("testdata", fmt.Sprintf("%s-%d.golden", name, n)), s)
			})
		}
	}
}

// DecodeBrief reads what Decode does, for the fields it has, at every
// kernel's length.
func TestDecodeBriefMatchesDecode(t *testing.T) {
	for _, name := range recorded {
		b := readHex(t, filepath.Join("testdata", name+".hex"))
		for _, n := range append(cuts, len(b)) {
			full, err := decode(b[:n], false)
			if err != nil {
				t.Fatal(err)
			}
			brief, err := decodeBrief(b[:n], false)
			if err != nil {
				t.Fatal(err)
			}
			if want := full.Brief(); brief != want {
				t.Errorf("%s, %d bytes: DecodeBrief = %+v, Decode gives %+v", name, n, brief, want)
			}
		}
	}
	if _, err := decodeBrief(make([]byte, baseLen-1), false); !errors.Is(err, ErrShort) {
		t.Errorf("short tcp_info: %v", err)
	}
}

func TestDecodeBBRGolden(t *testing.T) {
	b := readHex(t, filepath.Join("testdata", "sender-bbr.hex"))
	bbr, err := decodeBBR(b, false)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "sender-bbr.golden"), bbr)
}

// optEnds is where each optional field of model.Sample ends in struct
// tcp_info: the field is present exactly when the kernel's length reaches it.
var optEnds = map[string]int{
	"PacingRate": 112, "MaxPacingRate": 120, "BytesAcked": 128, "BytesReceived": 136,
	"SegsOut": 140, "SegsIn": 144, "NotsentBytes": 148, "MinRTT": 152,
	"DataSegsIn": 156, "DataSegsOut": 160, "DeliveryRate": 168,
	"BusyTime": 176, "RwndLimited": 184, "SndbufLimited": 192,
	"Delivered": 196, "DeliveredCE": 200, "BytesSent": 208, "BytesRetrans": 216,
	"DSACKDups": 220, "ReordSeen": 224, "RcvOOOPack": 228, "SndWnd": 232,
	"RcvWnd": 236, "Rehash": 240, "TotalRTO": 242, "TotalRTORecoveries": 244,
	"TotalRTOTime": 248, "ReceivedCE": 252,
}

// TestDecodeEveryLength cuts each recorded struct at every length from the
// base to the full size: each optional field must be present exactly when it
// fits and then equal the full decode; every other field must not change.
func TestDecodeEveryLength(t *testing.T) {
	for _, name := range recorded {
		t.Run(name, func(t *testing.T) {
			testEveryLength(t, readHex(t, filepath.Join("testdata", name+".hex")))
		})
	}
}

func testEveryLength(t *testing.T, b []byte) {
	full, err := decode(b, false)
	if err != nil {
		t.Fatal(err)
	}
	fv := reflect.ValueOf(full)
	typ := fv.Type()
	seen := 0
	for n := baseLen; n <= len(b); n++ {
		s, err := decode(b[:n], false)
		if err != nil {
			t.Fatalf("len %d: %v", n, err)
		}
		if s.KernelLen != n {
			t.Errorf("len %d: KernelLen = %d", n, s.KernelLen)
		}
		sv := reflect.ValueOf(s)
		for i := range typ.NumField() {
			name := typ.Field(i).Name
			if name == "KernelLen" {
				continue
			}
			got, want := sv.Field(i), fv.Field(i)
			end, isOpt := optEnds[name]
			if !isOpt {
				if !reflect.DeepEqual(got.Interface(), want.Interface()) {
					t.Errorf("len %d: %s = %v, want %v", n, name, got, want)
				}
				continue
			}
			if n == len(b) {
				seen++
			}
			// Pacing rates are also absent when unlimited, at any length.
			ok, wantOK := got.FieldByName("OK").Bool(), n >= end && want.FieldByName("OK").Bool()
			if ok != wantOK {
				t.Errorf("len %d: %s present = %v, want %v (ends at %d)", n, name, ok, wantOK, end)
			}
			if ok && !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("len %d: %s = %v, want %v", n, name, got, want)
			}
		}
	}
	if seen != len(optEnds) {
		t.Errorf("optEnds names %d fields, model.Sample has %d of them", len(optEnds), seen)
	}
	// RecvQ and SendQ come from ioctls, SndBuf from SO_SNDBUF, not from
	// tcp_info.
	notTCPInfo := map[string]bool{"RecvQ": true, "SendQ": true, "SndBuf": true}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == typ.PkgPath() && f.Type.NumField() == 2 {
			if _, ok := optEnds[f.Name]; !ok && !notTCPInfo[f.Name] && f.Type.Field(1).Name == "OK" {
				t.Errorf("model.Sample.%s is optional but optEnds does not say where it ends", f.Name)
			}
		}
	}
}

func TestDecodeTruncated(t *testing.T) {
	b := readHex(t, filepath.Join("testdata", "sender.hex"))
	if _, err := Decode(b[:baseLen-1]); !errors.Is(err, ErrShort) {
		t.Errorf("Decode(%d bytes) error = %v, want ErrShort", baseLen-1, err)
	}
	if _, err := Decode(nil); !errors.Is(err, ErrShort) {
		t.Errorf("Decode(nil) error = %v, want ErrShort", err)
	}
	// The 5.4–6.1 layout ends at snd_wnd: the peer's window is known, ours
	// is not, and must not read as a zero window.
	s, err := decode(b[:232], false)
	if err != nil {
		t.Fatal(err)
	}
	if !s.SndWnd.OK || s.RcvWnd.OK || s.Rehash.OK || s.TotalRTO.OK {
		t.Errorf("at 232 bytes SndWnd.OK=%v RcvWnd.OK=%v Rehash.OK=%v TotalRTO.OK=%v, want true false false false",
			s.SndWnd.OK, s.RcvWnd.OK, s.Rehash.OK, s.TotalRTO.OK)
	}
	// A future kernel's longer struct decodes the same, recording its length.
	long := append(append([]byte(nil), b...), make([]byte, 16)...)
	s, err = decode(long, false)
	if err != nil || s.KernelLen != len(long) || !s.ReceivedCE.OK {
		t.Errorf("decode(%d bytes) = KernelLen %d, ReceivedCE.OK %v, err %v", len(long), s.KernelLen, s.ReceivedCE.OK, err)
	}
}

// put writes a little-endian test struct field.
func put(b []byte, off int, v any) {
	switch v := v.(type) {
	case uint16:
		binary.LittleEndian.PutUint16(b[off:], v)
	case uint32:
		binary.LittleEndian.PutUint32(b[off:], v)
	case uint64:
		binary.LittleEndian.PutUint64(b[off:], v)
	default:
		panic(fmt.Sprintf("put %T", v))
	}
}

func TestDecodeConversions(t *testing.T) {
	b := make([]byte, 280)
	b[offState] = 1
	b[offOptions] = optTimestamps | optSACK | optWScale | optUSecTS
	b[offWScale] = 0x97    // rcv_wscale 9 (high nibble), snd_wscale 7 (low)
	b[offRateFlags] = 0x05 // app_limited, fastopen_client_fail 2
	put(b, offRTO, uint32(204000))
	put(b, offRTT, uint32(1500))
	put(b, offLastDataSent, uint32(12))
	put(b, offSndSsthresh, uint32(0x7fffffff))
	put(b, offPacingRate, uint64(math.MaxUint64))
	put(b, offMaxPacingRate, uint64(math.MaxUint32))
	put(b, offDeliveryRate, uint64(1_250_000))
	put(b, offBusyTime, uint64(math.MaxUint64))
	put(b, offBytesAcked, uint64(math.MaxUint64))
	put(b, offTotalRTO, uint16(3))
	put(b, offTotalRTORecov, uint16(2))
	put(b, offTotalRTOTime, uint32(250))
	s, err := decode(b, false)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"State", s.State.String(), "established"},
		{"Options", s.Options, model.Options{SACK: true, Timestamps: true, WindowScaling: true, SndWScale: 7, RcvWScale: 9, USecTS: true}},
		{"DeliveryRateAppLimited", s.DeliveryRateAppLimited, true},
		{"RTO", s.RTO, 204 * time.Millisecond},
		{"RTT", s.RTT, 1500 * time.Microsecond},
		{"LastDataSent", s.LastDataSent, 12 * time.Millisecond},
		{"SsthreshInfinite", s.SsthreshInfinite, true},
		{"SsthreshBytes", s.SsthreshBytes(), model.Opt[model.Bytes]{}},
		{"PacingRate (~0)", s.PacingRate, model.Opt[model.Bitrate]{}},
		{"MaxPacingRate (~0U)", s.MaxPacingRate, model.Opt[model.Bitrate]{}},
		{"DeliveryRate", s.DeliveryRate, model.Some(10 * model.MbitPerSecond)},
		{"BusyTime saturates", s.BusyTime, model.Some(time.Duration(math.MaxInt64))},
		{"BytesAcked saturates", s.BytesAcked, model.Some(model.Bytes(math.MaxInt64))},
		{"TotalRTO", s.TotalRTO, model.Some(uint32(3))},
		{"TotalRTORecoveries", s.TotalRTORecoveries, model.Some(uint32(2))},
		{"TotalRTOTime", s.TotalRTOTime, model.Some(250 * time.Millisecond)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	// fastopen_client_fail alone must not read as app-limited.
	b[offRateFlags] = 0x06
	if s, _ := decode(b, false); s.DeliveryRateAppLimited {
		t.Error("fastopen_client_fail bits leaked into DeliveryRateAppLimited")
	}
}

// TestDecodeBigEndian checks the other ABI: integers big-endian and
// bitfields allocated from the most significant bit.
func TestDecodeBigEndian(t *testing.T) {
	b := make([]byte, 232)
	b[offWScale] = 0x79    // snd_wscale 7 (high nibble), rcv_wscale 9
	b[offRateFlags] = 0x80 // app_limited is the top bit
	binary.BigEndian.PutUint32(b[offRTT:], 1500)
	binary.BigEndian.PutUint32(b[offSndWnd:], 65535)
	s, err := decode(b, true)
	if err != nil {
		t.Fatal(err)
	}
	if s.Options.SndWScale != 7 || s.Options.RcvWScale != 9 || !s.DeliveryRateAppLimited ||
		s.RTT != 1500*time.Microsecond || s.SndWnd != model.Some(model.Bytes(65535)) {
		t.Errorf("big-endian decode: wscale %d/%d app-limited %v RTT %v SndWnd %v",
			s.Options.SndWScale, s.Options.RcvWScale, s.DeliveryRateAppLimited, s.RTT, s.SndWnd)
	}
}

func TestDecodeBBR(t *testing.T) {
	b := make([]byte, 20)
	put(b, 0, uint32(5))
	put(b, 4, uint32(1)) // bw = 2³² + 5 bytes/s
	put(b, 8, uint32(42))
	put(b, 12, uint32(739)) // BBRv1 startup gain 2/ln2 ≈ 2.89
	put(b, 16, uint32(512))
	got, err := decodeBBR(b, false)
	if err != nil {
		t.Fatal(err)
	}
	want := &model.BBRInfo{
		BW:         model.Bitrate((1<<32 + 5) * 8),
		MinRTT:     42 * time.Microsecond,
		PacingGain: 739.0 / 256,
		CwndGain:   2,
	}
	if *got != *want {
		t.Errorf("decodeBBR = %+v, want %+v", *got, *want)
	}
	if _, err := DecodeBBR(b[:19]); !errors.Is(err, ErrShort) {
		t.Errorf("DecodeBBR(19 bytes) error = %v, want ErrShort", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, name := range append(recorded, "sender-bbr") {
		f.Add(readHex(f, filepath.Join("testdata", name+".hex")))
	}
	f.Add([]byte{})
	f.Add(make([]byte, baseLen))
	f.Add(make([]byte, 233))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, be := range []bool{false, true} {
			s, err := decode(b, be)
			if (err != nil) != (len(b) < baseLen) {
				t.Fatalf("len %d: err = %v", len(b), err)
			}
			if err == nil && s.KernelLen != len(b) {
				t.Fatalf("KernelLen = %d, want %d", s.KernelLen, len(b))
			}
			if s.RTT < 0 || s.BusyTime.V < 0 || s.BytesAcked.V < 0 || s.TotalRTOTime.V < 0 {
				t.Fatalf("negative duration or size: %+v", s)
			}
			bbr, err := decodeBBR(b, be)
			if (err != nil) != (len(b) < bbrInfoLen) || (err == nil && (bbr.BW < 0 || bbr.MinRTT < 0)) {
				t.Fatalf("decodeBBR(%d bytes) = %+v, %v", len(b), bbr, err)
			}
		}
	})
}
