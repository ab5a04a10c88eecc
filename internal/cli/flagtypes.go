package cli

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// seconds is a duration flag that also takes a bare number of seconds,
// as iperf3 users type it ("-t 30", "-i 0.1") besides "30s" or "100ms".
type seconds struct{ d *time.Duration }

func (s seconds) String() string {
	if s.d == nil || *s.d == 0 {
		return "0" // what pflag takes for "no default" in help output
	}
	return s.d.String()
}
func (s seconds) Type() string { return "duration" }
func (s seconds) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 {
			return fmt.Errorf("negative duration %q", v)
		}
		*s.d = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("duration %q: want seconds (10, 0.5) or a unit (10s, 100ms)", v)
	}
	if d < 0 {
		return fmt.Errorf("negative duration %q", v)
	}
	*s.d = d
	return nil
}

// size is a byte-size flag using model.ParseBytes.
type size struct{ b *model.Bytes }

func (s size) String() string {
	if s.b == nil || *s.b == 0 {
		return "0"
	}
	return s.b.Binary()
}
func (s size) Type() string { return "size" }
func (s size) Set(v string) error {
	b, err := model.ParseBytes(v)
	if err != nil {
		return err
	}
	*s.b = b
	return nil
}

// rate is a bit-rate flag using model.ParseBitrate.
type rate struct{ r *model.Bitrate }

func (r rate) String() string {
	if r.r == nil || *r.r == 0 {
		return "0"
	}
	return r.r.String()
}
func (r rate) Type() string { return "rate" }
func (r rate) Set(v string) error {
	b, err := model.ParseBitrate(v)
	if err != nil {
		return err
	}
	*r.r = b
	return nil
}

// hostPort splits "HOST[:PORT]", accepting bare and bracketed IPv6.
func hostPort(arg string, defPort int) (string, error) {
	if arg == "" {
		return "", usagef("tcpscope test 127.0.0.1", "empty server address")
	}
	host, port := arg, strconv.Itoa(defPort)
	switch {
	case strings.HasPrefix(arg, "["):
		i := strings.Index(arg, "]")
		if i < 0 {
			return "", usagef("write IPv6 as [::1]:5201", "bad address %q", arg)
		}
		host = arg[1:i]
		if rest := arg[i+1:]; rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return "", usagef("write IPv6 as [::1]:5201", "bad address %q", arg)
			}
			port = rest[1:]
		}
	case strings.Count(arg, ":") == 1:
		i := strings.LastIndex(arg, ":")
		host, port = arg[:i], arg[i+1:]
	default:
		// A bare IPv6 address whose last group reads as a port too
		// (::1:5461) is ambiguous: taken whole, a test would go to
		// another address on the default port.
		i := strings.LastIndex(arg, ":")
		if whole, err := netip.ParseAddr(arg); err == nil && whole.Is6() && i > 0 {
			if prefix, err := netip.ParseAddr(arg[:i]); err == nil && prefix.Is6() {
				if p, err := strconv.Atoi(arg[i+1:]); err == nil && p >= 1 && p <= 65535 {
					return "", usagef(fmt.Sprintf("write [%s]:%d for port %d of %s, or [%s] for the address %s", arg[:i], p, p, arg[:i], arg, arg),
						"ambiguous address %q", arg)
				}
			}
		}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", usagef("ports are 1-65535", "bad port %q in %q", port, arg)
	}
	if host == "" {
		return "", usagef("tcpscope test 127.0.0.1:5201", "no host in %q", arg)
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(p), nil
	}
	return host + ":" + strconv.Itoa(p), nil
}

// millis is a duration flag that takes a bare number as milliseconds,
// as iperf3's --connect-timeout does ("3000"), besides a unit ("3s").
type millis struct{ d *time.Duration }

func (m millis) String() string {
	if m.d == nil || *m.d == 0 {
		return "0"
	}
	return m.d.String()
}
func (m millis) Type() string { return "ms" }
func (m millis) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f <= 0 || f > float64(24*time.Hour/time.Millisecond) {
			return fmt.Errorf("%q out of range: want milliseconds from 1 to a day's", v)
		}
		*m.d = time.Duration(f * float64(time.Millisecond))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q: want milliseconds (3000, as iperf3) or a unit (3s, 500ms)", v)
	}
	if d <= 0 || d > 24*time.Hour {
		return fmt.Errorf("%q out of range: want from 1ms to 24h", v)
	}
	*m.d = d
	return nil
}

// tos is -S: the IP type-of-service byte, in decimal, hex (0x) or octal
// (a leading 0), as iperf3 reads it.
type tos struct{ v *int }

func (t tos) String() string {
	if t.v == nil || *t.v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", *t.v)
}
func (t tos) Type() string { return "byte" }
func (t tos) Set(s string) error {
	v, err := strconv.ParseInt(s, 0, 0)
	if err != nil || v < 0 || v > 255 {
		return fmt.Errorf("%q: want a byte, 0 to 255 (decimal, 0x hex or 0 octal), e.g. 0xb8 for EF", s)
	}
	*t.v = int(v)
	return nil
}

// dscpNames are the DiffServ code points --dscp takes by name, as
// iperf3's (RFC 2474, 2597, 3246, 5865, 8622).
var dscpNames = map[string]int{
	"cs0": 0, "cs1": 8, "cs2": 16, "cs3": 24, "cs4": 32, "cs5": 40, "cs6": 48, "cs7": 56,
	"af11": 10, "af12": 12, "af13": 14, "af21": 18, "af22": 20, "af23": 22,
	"af31": 26, "af32": 28, "af33": 30, "af41": 34, "af42": 36, "af43": 38,
	"ef": 46, "voice-admit": 44, "le": 1,
}

// dscp is --dscp: a DiffServ code point, 0 to 63 or a name (EF, AF41,
// CS1, ...), kept as the type-of-service byte it makes (the code point
// shifted over the two ECN bits).
type dscp struct{ tos *int }

func (d dscp) String() string {
	if d.tos == nil || *d.tos == 0 {
		return "0"
	}
	return strconv.Itoa(*d.tos >> 2)
}
func (d dscp) Type() string { return "dscp" }
func (d dscp) Set(s string) error {
	v, ok := dscpNames[strings.ToLower(s)]
	if !ok {
		n, err := strconv.ParseInt(s, 0, 0)
		if err != nil || n < 0 || n > 63 {
			return fmt.Errorf("%q: want a code point 0 to 63 or a name (EF, AF11-AF43, CS0-CS7, LE, VOICE-ADMIT)", s)
		}
		v = int(n)
	}
	*d.tos = v << 2
	return nil
}

// affinity is -A n[,m], iperf3's: the CPU to pin the client to, and the
// one to ask the server to pin itself to.
type affinity struct{ client, server **int }

func (a affinity) String() string {
	if a.client == nil || *a.client == nil {
		return ""
	}
	s := strconv.Itoa(**a.client)
	if *a.server != nil {
		s += "," + strconv.Itoa(**a.server)
	}
	return s
}
func (a affinity) Type() string { return "n[,m]" }
func (a affinity) Set(v string) error {
	cs, ss, both := strings.Cut(v, ",")
	cpu := func(s string) (*int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 1023 {
			return nil, fmt.Errorf("%q: want -A n or n,m, CPU numbers from 0 as the kernel counts them", v)
		}
		return &n, nil
	}
	c, err := cpu(cs)
	if err != nil {
		return err
	}
	*a.client, *a.server = c, nil
	if both {
		if *a.server, err = cpu(ss); err != nil {
			return err
		}
	}
	return nil
}
