package model

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestParseBitrate(t *testing.T) {
	cases := []struct {
		in   string
		want Bitrate
	}{
		{"100M", 100e6}, // SI: 10^8, never 100·1024²
		{"100m", 100e6},
		{"2.5G", 2.5e9},
		{"100Mbit/s", 100e6},
		{"40 kbps", 40e3},
		{"1e9", 1e9},
		{"1000", 1000},
		{"10MB/s", 80e6},
		{"1T", 1e12},
	}
	for _, c := range cases {
		got, err := ParseBitrate(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseBitrate(%q) = %v, %v; want %v", c.in, float64(got), err, float64(c.want))
		}
	}
	for _, bad := range []string{"", "fast", "-5M", "10Q", "1e999", "M"} {
		if _, err := ParseBitrate(bad); !errors.Is(err, ErrBadUnit) {
			t.Errorf("ParseBitrate(%q) error = %v, want ErrBadUnit", bad, err)
		}
	}
	// Parseable but beyond any link: refused as out of range, not taken
	// into arithmetic that overflows (-b 1e99 once throttled a test).
	if got, err := ParseBitrate("1P"); err == nil {
		t.Errorf("ParseBitrate(1P) = %v, want an error", got)
	}
	for _, big := range []string{"1e99", "1001T", "1.1e15"} {
		if _, err := ParseBitrate(big); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("ParseBitrate(%q) error = %v, want ErrOutOfRange", big, err)
		}
	}
	if r, err := ParseBitrate("1000T"); err != nil || r != MaxBitrate {
		t.Errorf("ParseBitrate(1000T) = %v, %v; want the maximum", r, err)
	}
}

func TestParseBytes(t *testing.T) {
	cases := []struct {
		in   string
		want Bytes
	}{
		{"64K", 65536},
		{"128KiB", 131072},
		{"1.5M", 1572864},
		{"4MB", 4000000},
		{"4kB", 4000},
		{"1000", 1000},
		{"2G", 2 << 30},
		{"17520B", 17520},
	}
	for _, c := range cases {
		got, err := ParseBytes(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "big", "-1K", "3X"} {
		if _, err := ParseBytes(bad); !errors.Is(err, ErrBadUnit) {
			t.Errorf("ParseBytes(%q) error = %v, want ErrBadUnit", bad, err)
		}
	}
	if _, err := ParseBytes("1e30"); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("ParseBytes(1e30) error = %v, want ErrOutOfRange (it is a size, just too large)", err)
	}
}

func TestFormatRate(t *testing.T) {
	cases := []struct {
		r    Bitrate
		f    RateFormat
		want string
	}{
		{94.3e6, RateAuto, "94.3 Mbit/s"},
		{966.5e6, RateAuto, "966 Mbit/s"},
		{17.9e9, RateAuto, "17.9 Gbit/s"},
		{3.504e6, RateAuto, "3.50 Mbit/s"},
		{512, RateAuto, "512 bit/s"},
		{0, RateAuto, "0 bit/s"},
		{1e9, RateMbit, "1000 Mbit/s"},
		{1e9, RateGbit, "1.00 Gbit/s"},
		{80e6, RateAutoBytes, "10.0 MB/s"},
		{80e6, RateKB, "10000 kB/s"},
	}
	for _, c := range cases {
		if got := FormatRate(c.r, c.f); got != c.want {
			t.Errorf("FormatRate(%v, %c) = %q, want %q", float64(c.r), c.f, got, c.want)
		}
	}
	if _, err := ParseRateFormat("x"); err == nil {
		t.Error("ParseRateFormat(x) accepted")
	}
}

// The seed's ttcp flaw: 1 Mbit/s is 10^6 bit/s. 125,000 bytes in one second
// is exactly 1 Mbit/s, not 0.95.
func TestRateOfIsSI(t *testing.T) {
	if got := RateOf(125000, 1); got != MbitPerSecond {
		t.Fatalf("RateOf(125000 B, 1 s) = %v, want 1 Mbit/s", got)
	}
	if got := RateOf(17520, 0.040); FormatRate(got, RateAuto) != "3.50 Mbit/s" {
		t.Fatalf("17,520 B per 40 ms = %v, want 3.50 Mbit/s", got)
	}
	if RateOf(1, 0) != 0 {
		t.Fatal("RateOf over zero time must be 0")
	}
}

func TestBytesFormat(t *testing.T) {
	cases := []struct {
		b        Bytes
		bin, dec string
	}{
		{65536, "64.0 KiB", "65.5 kB"},
		{1 << 20, "1.00 MiB", "1.05 MB"},
		{1000, "1000 B", "1.00 kB"},
		{999, "999 B", "999 B"},
		{6160000000, "5.74 GiB", "6.16 GB"},
	}
	for _, c := range cases {
		if got := c.b.Binary(); got != c.bin {
			t.Errorf("Binary(%d) = %q, want %q", c.b, got, c.bin)
		}
		if got := c.b.Decimal(); got != c.dec {
			t.Errorf("Decimal(%d) = %q, want %q", c.b, got, c.dec)
		}
	}
}

func TestOptJSON(t *testing.T) {
	type doc struct {
		A Opt[Bytes] `json:"a,omitzero"`
		B Opt[Bytes] `json:"b,omitzero"`
	}
	out, err := json.Marshal(doc{A: Some[Bytes](5)})
	if err != nil || string(out) != `{"a":5}` {
		t.Fatalf("marshal = %s, %v; want absent field omitted", out, err)
	}
	var back doc
	if err := json.Unmarshal([]byte(`{"a":0}`), &back); err != nil {
		t.Fatal(err)
	}
	if !back.A.OK || back.A.V != 0 || back.B.OK {
		t.Fatalf("unmarshal = %+v: a present zero must stay present, b absent", back)
	}
}

func TestLimitedBetween(t *testing.T) {
	ms := time.Millisecond
	prev := Sample{At: 0, BusyTime: Some(100 * ms), RwndLimited: Some(10 * ms), SndbufLimited: Some(0 * ms)}
	cur := Sample{At: 1000 * ms, BusyTime: Some(900 * ms), RwndLimited: Some(610 * ms), SndbufLimited: Some(100 * ms)}
	l, ok := LimitedBetween(&prev, &cur).Get()
	if !ok {
		t.Fatal("absent")
	}
	// busy 800 ms of which rwnd 600, sndbuf 100 → cwnd 100; idle 200.
	want := Limited{Rwnd: 0.6, Sndbuf: 0.1, Cwnd: 0.1, App: 0.2}
	const eps = 1e-9
	if !near(l, want) {
		t.Fatalf("LimitedBetween = %+v, want %+v", l, want)
	}
	old := Sample{At: 0}
	if LimitedBetween(&old, &old).OK {
		t.Fatal("kernel without chrono counters must give an absent value")
	}
	// Jiffy quantisation can make a counter run ahead of the interval.
	over := Sample{At: 10 * ms, BusyTime: Some(120 * ms), RwndLimited: Some(40 * ms), SndbufLimited: Some[time.Duration](0)}
	l, _ = LimitedBetween(&prev, &over).Get()
	if l.App < 0 || l.Rwnd+l.Sndbuf+l.Cwnd+l.App > 1+eps {
		t.Fatalf("fractions out of range: %+v", l)
	}
}

func near(a, b Limited) bool {
	d := func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }
	return d(a.Rwnd, b.Rwnd) && d(a.Sndbuf, b.Sndbuf) && d(a.Cwnd, b.Cwnd) && d(a.App, b.App)
}

func TestDirections(t *testing.T) {
	c := TestConfig{Parallel: 2, Bidir: true}
	got := c.Directions()
	want := []Direction{ClientToServer, ClientToServer, ServerToClient, ServerToClient}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if RoleOf(ClientSide, ServerToClient) != Receiver || RoleOf(ServerSide, ServerToClient) != Sender {
		t.Fatal("RoleOf wrong")
	}
}

func TestGroupDigits(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 83333.3: "83,333", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := GroupDigits(in); got != want {
			t.Errorf("GroupDigits(%v) = %q, want %q", in, got, want)
		}
	}
}
