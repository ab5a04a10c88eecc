package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Bitrate is a data rate in bits per second. Prefixes are SI: 1 Mbit/s is
// 10^6 bit/s, never 1024².
type Bitrate float64

// Common rates.
const (
	BitPerSecond  Bitrate = 1
	KbitPerSecond Bitrate = 1e3
	MbitPerSecond Bitrate = 1e6
	GbitPerSecond Bitrate = 1e9
	TbitPerSecond Bitrate = 1e12
)

// MaxBitrate is the fastest rate tcpscope takes anywhere (flags, limits
// files, a client's hello): 1 Pbit/s, over a thousand times the fastest
// Ethernet, so no real rate is refused, while a rate times a duration of
// up to 20 hours stays within Bytes. A larger rate is a typo or an attack
// (-b 1e99 throttled a test to 5.7 Gbit/s through overflowed arithmetic).
const MaxBitrate Bitrate = 1e15

// Bytes is an amount of data. Formatting says which convention it uses:
// KiB/MiB/GiB are powers of 1024, kB/MB/GB powers of 1000.
type Bytes int64

// Common sizes.
const (
	Byte Bytes = 1
	KiB  Bytes = 1 << 10
	MiB  Bytes = 1 << 20
	GiB  Bytes = 1 << 30
	KB   Bytes = 1000
	MB   Bytes = 1000 * KB
	GB   Bytes = 1000 * MB
)

// ErrBadUnit reports an unparseable rate or size.
var ErrBadUnit = errors.New("bad unit")

// ErrOutOfRange reports a rate or size that parses but is larger than
// tcpscope takes.
var ErrOutOfRange = errors.New("out of range")

// RateOf is the rate that moves n bytes in seconds s. It returns 0 for s <= 0.
func RateOf(n Bytes, seconds float64) Bitrate {
	if seconds <= 0 {
		return 0
	}
	return Bitrate(float64(n) * 8 / seconds)
}

// BytesPerSecond is the rate in bytes per second (kernel pacing and delivery
// rates use this unit).
func (r Bitrate) BytesPerSecond() float64 { return float64(r) / 8 }

// String formats r with an SI prefix chosen for readability, e.g. "94.3 Mbit/s".
func (r Bitrate) String() string { return FormatRate(r, RateAuto) }

// RateFormat selects how bit rates are printed. The letters follow iperf3's
// -f flag: lower case for bits per second, upper case for bytes per second;
// unlike iperf3 every prefix is SI (kB/s is 1000 bytes per second).
type RateFormat byte

// Rate formats.
const (
	RateAuto      RateFormat = 'a'
	RateKbit      RateFormat = 'k'
	RateMbit      RateFormat = 'm'
	RateGbit      RateFormat = 'g'
	RateTbit      RateFormat = 't'
	RateAutoBytes RateFormat = 'A'
	RateKB        RateFormat = 'K'
	RateMB        RateFormat = 'M'
	RateGB        RateFormat = 'G'
	RateTB        RateFormat = 'T'
)

// ParseRateFormat accepts one of a k m g t A K M G T.
func ParseRateFormat(s string) (RateFormat, error) {
	if len(s) == 1 && strings.Contains("akmgtAKMGT", s) {
		return RateFormat(s[0]), nil
	}
	return 0, fmt.Errorf("%w: format %q: want one of a k m g t (bit/s) or A K M G T (byte/s)", ErrBadUnit, s)
}

var siPrefixes = []struct {
	letter byte
	scale  float64
	name   string
}{{'t', 1e12, "T"}, {'g', 1e9, "G"}, {'m', 1e6, "M"}, {'k', 1e3, "k"}}

// FormatRate prints r in format f with three significant digits.
func FormatRate(r Bitrate, f RateFormat) string { return string(AppendRate(nil, r, f)) }

// AppendRate appends r as FormatRate prints it: a list of thousands of
// connections formats their rates without a string each.
func AppendRate(b []byte, r Bitrate, f RateFormat) []byte {
	v := float64(r)
	unit := "bit/s"
	lower := byte(unicode.ToLower(rune(f)))
	if f >= 'A' && f <= 'Z' {
		v /= 8
		unit = "B/s"
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(append(b, "- "...), unit...)
	}
	name, scale := "", 1.0
	for _, p := range siPrefixes {
		if lower == 'a' && math.Abs(v) >= p.scale || p.letter == lower {
			name, scale = p.name, p.scale
			break
		}
	}
	b = appendSig3(b, v/scale)
	return append(append(append(b, ' '), name...), unit...)
}

// sig3 prints v with three significant digits but never in exponent form.
func sig3(v float64) string { return string(appendSig3(nil, v)) }

func appendSig3(b []byte, v float64) []byte {
	a := math.Abs(v)
	switch {
	case a == 0:
		return append(b, '0')
	case a >= 100:
		return strconv.AppendFloat(b, v, 'f', 0, 64)
	case a >= 10:
		return strconv.AppendFloat(b, v, 'f', 1, 64)
	case a >= 1:
		return strconv.AppendFloat(b, v, 'f', 2, 64)
	default:
		return strconv.AppendFloat(b, v, 'f', 3, 64)
	}
}

// String formats b in binary units (KiB, MiB, GiB), e.g. "1.25 MiB".
func (b Bytes) String() string { return b.Binary() }

// Binary formats b with powers of 1024.
func (b Bytes) Binary() string { return string(b.AppendBinary(nil)) }

var binaryUnits = []struct {
	s float64
	n string
}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}}

// AppendBinary appends b as Binary formats it.
func (b Bytes) AppendBinary(dst []byte) []byte {
	v := float64(b)
	for _, u := range binaryUnits {
		if math.Abs(v) >= u.s {
			return append(append(appendSig3(dst, v/u.s), ' '), u.n...)
		}
	}
	return append(strconv.AppendInt(dst, int64(b), 10), " B"...)
}

// Decimal formats b with powers of 1000 (kB, MB, GB).
func (b Bytes) Decimal() string {
	v := float64(b)
	for _, u := range []struct {
		s float64
		n string
	}{{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}} {
		if math.Abs(v) >= u.s {
			return sig3(v/u.s) + " " + u.n
		}
	}
	return strconv.FormatInt(int64(b), 10) + " B"
}

// ParseBitrate reads a rate such as "100M", "2.5G", "100Mbit/s", "1e9" or
// "40 kbps". Prefixes are SI powers of 1000 whatever their case: "100M" is
// 10^8 bit/s. A trailing "B/s" or "Bps" means bytes per second.
func ParseBitrate(s string) (Bitrate, error) {
	t := strings.TrimSpace(s)
	num, rest := splitNumber(t)
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%w: rate %q: want a number with an optional k, M, G or T prefix, e.g. 100M", ErrBadUnit, s)
	}
	rest = strings.TrimSpace(rest)
	mult := 1.0
	if rest != "" {
		switch rest[0] {
		case 'k', 'K':
			mult, rest = 1e3, rest[1:]
		case 'm', 'M':
			mult, rest = 1e6, rest[1:]
		case 'g', 'G':
			mult, rest = 1e9, rest[1:]
		case 't', 'T':
			mult, rest = 1e12, rest[1:]
		}
	}
	switch rest {
	case "", "bit/s", "bps", "b/s", "bit":
	case "B/s", "Bps", "byte/s":
		mult *= 8
	default:
		return 0, fmt.Errorf("%w: rate %q: unknown unit %q (use bit/s, bps or B/s)", ErrBadUnit, s, rest)
	}
	if r := Bitrate(v * mult); r <= MaxBitrate {
		return r, nil
	}
	return 0, fmt.Errorf("%w: rate %q is over 1 Pbit/s, the most tcpscope takes", ErrOutOfRange, s)
}

// ParseBytes reads a size such as "64K", "128KiB", "1.5M", "4MB" or "1000".
// K, M, G, T and KiB, MiB, GiB, TiB are powers of 1024 (as iperf3 users
// expect for -w and -l); kB, MB, GB, TB are powers of 1000.
func ParseBytes(s string) (Bytes, error) {
	t := strings.TrimSpace(s)
	num, rest := splitNumber(t)
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%w: size %q: want a number with an optional K, M, G suffix, e.g. 128K", ErrBadUnit, s)
	}
	var mult float64
	switch strings.TrimSpace(rest) {
	case "", "B", "b":
		mult = 1
	case "K", "k", "KiB":
		mult = 1 << 10
	case "M", "m", "MiB":
		mult = 1 << 20
	case "G", "g", "GiB":
		mult = 1 << 30
	case "T", "t", "TiB":
		mult = 1 << 40
	case "kB", "KB":
		mult = 1e3
	case "MB":
		mult = 1e6
	case "GB":
		mult = 1e9
	case "TB":
		mult = 1e12
	default:
		return 0, fmt.Errorf("%w: size %q: unknown unit %q (use K/KiB, M/MiB, G/GiB or kB, MB, GB)", ErrBadUnit, s, rest)
	}
	out := v * mult
	if out > math.MaxInt64/2 {
		return 0, fmt.Errorf("%w: size %q is too large", ErrOutOfRange, s)
	}
	return Bytes(math.Round(out)), nil
}

// splitNumber splits "12.5Mbit/s" into "12.5" and "Mbit/s".
func splitNumber(s string) (string, string) {
	i := 0
	for i < len(s) {
		c := s[i]
		if (c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-' {
			i++
			continue
		}
		// Allow an exponent such as 1e9, but not the "e" of a unit.
		if (c == 'e' || c == 'E') && i > 0 && i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '-' || s[i+1] == '+') {
			i++
			continue
		}
		break
	}
	return s[:i], s[i:]
}

// GroupDigits formats a count rounded to a whole number with thousands
// separators: 83333.3 → "83,333".
func GroupDigits(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Iperf3Bytes formats b as iperf3's text reports do ("1.25 MBytes"):
// powers of 1024, three significant digits, a "Bytes" unit.
func Iperf3Bytes(b Bytes) string { return iperf3Unit(float64(b), 1024, "Bytes") }

// Iperf3Rate formats r as iperf3's text reports do ("10.5 Mbits/sec"):
// powers of 1000, three significant digits.
func Iperf3Rate(r Bitrate) string { return iperf3Unit(float64(r), 1000, "bits/sec") }

// iperf3Unit scales v by step until under it (at most to T), and prints
// it with 2, 1 or 0 decimals as iperf3 does: under 9.995, under 99.95,
// or above.
func iperf3Unit(v, step float64, unit string) string {
	prefixes := []string{"", "K", "M", "G", "T"}
	i := 0
	for v >= step && i < len(prefixes)-1 {
		v /= step
		i++
	}
	decimals := 0
	switch {
	case v < 9.995:
		decimals = 2
	case v < 99.95:
		decimals = 1
	}
	return fmt.Sprintf("%4.*f %s%s", decimals, v, prefixes[i], unit)
}
