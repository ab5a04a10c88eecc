package limits

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/tcpscope/tcpscope/internal/model"
)

// file is a limits file as TOML has it. Pointers tell a setting left out
// (inherited) from one set to zero.
type file struct {
	Server  *serverFile `toml:"server"`
	Default *classFile  `toml:"default"`
	Class   []classFile `toml:"class"`
}

type serverFile struct {
	MaxTests        *int `toml:"max_tests"`
	MaxTotalStreams *int `toml:"max_total_streams"`
	MaxPending      *int `toml:"max_pending"`
}

type classFile struct {
	Name                 string   `toml:"name"`
	Networks             []string `toml:"networks"`
	Action               string   `toml:"action"`
	MaxTests             *int     `toml:"max_tests"`
	MaxTotalStreams      *int     `toml:"max_total_streams"`
	MaxTestsPerAddress   *int     `toml:"max_tests_per_address"`
	MaxStreams           *int     `toml:"max_streams"`
	MaxDuration          *string  `toml:"max_duration"`
	MaxRate              *string  `toml:"max_rate"`
	MaxUDPRate           *string  `toml:"max_udp_rate"`
	Protocols            []string `toml:"protocols"`
	MaxPendingPerAddress *int     `toml:"max_pending_per_address"`
}

// Parse reads a limits file. What the file leaves out is base's: the
// server's bounds, and the default class, which every class then
// inherits from. Unknown settings are errors, so that a misspelt limit
// is not silently no limit.
func Parse(data []byte, base Table) (Table, error) {
	var f file
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var se *toml.StrictMissingError
		if errors.As(err, &se) && len(se.Errors) > 0 {
			row, _ := se.Errors[0].Position()
			return Table{}, fmt.Errorf("line %d: unknown setting %q", row, strings.Join(se.Errors[0].Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return Table{}, fmt.Errorf("line %d: %s", row, de.Error())
		}
		return Table{}, err
	}
	t := Table{Server: base.Server, Default: base.Default}
	t.Default.Name = "default"
	t.Default.Networks = nil
	if f.Server != nil {
		setInt(&t.Server.MaxTests, f.Server.MaxTests)
		setInt(&t.Server.MaxTotalStreams, f.Server.MaxTotalStreams)
		setInt(&t.Server.MaxPending, f.Server.MaxPending)
	}
	if f.Default != nil {
		if f.Default.Name != "" || len(f.Default.Networks) > 0 {
			return Table{}, errors.New("[default]: takes no name or networks (it holds every address no class holds)")
		}
		if err := f.Default.apply(&t.Default); err != nil {
			return Table{}, fmt.Errorf("[default]: %w", err)
		}
	}
	for i, cf := range f.Class {
		c := t.Default
		c.Name = cf.Name
		c.Networks = nil
		if c.Name == "" {
			return Table{}, fmt.Errorf("class %d: give it a name", i+1)
		}
		for _, n := range cf.Networks {
			p, err := parseNetwork(n)
			if err != nil {
				return Table{}, fmt.Errorf("class %q: %w", c.Name, err)
			}
			c.Networks = append(c.Networks, p)
		}
		if err := cf.apply(&c); err != nil {
			return Table{}, fmt.Errorf("class %q: %w", c.Name, err)
		}
		t.Classes = append(t.Classes, c)
	}
	if err := t.Check(); err != nil {
		return Table{}, err
	}
	return t, nil
}

// apply sets what the file gives over c's inherited values.
func (cf *classFile) apply(c *Class) error {
	switch cf.Action {
	case "", "allow":
		c.Deny = false
	case "deny":
		c.Deny = true
	default:
		return fmt.Errorf("action = %q: use allow or deny", cf.Action)
	}
	setInt(&c.MaxTests, cf.MaxTests)
	setInt(&c.MaxTotalStreams, cf.MaxTotalStreams)
	setInt(&c.MaxTestsPerAddr, cf.MaxTestsPerAddress)
	setInt(&c.MaxStreams, cf.MaxStreams)
	setInt(&c.MaxPendingPerAddr, cf.MaxPendingPerAddress)
	if cf.MaxDuration != nil {
		d, err := time.ParseDuration(*cf.MaxDuration)
		if err != nil {
			return fmt.Errorf("max_duration = %q: want a duration such as \"90s\" or \"1h\"", *cf.MaxDuration)
		}
		c.MaxDuration = d
	}
	for _, r := range []struct {
		name string
		in   *string
		out  *model.Bitrate
	}{{"max_rate", cf.MaxRate, &c.MaxRate}, {"max_udp_rate", cf.MaxUDPRate, &c.MaxUDPRate}} {
		if r.in == nil {
			continue
		}
		if strings.EqualFold(strings.TrimSpace(*r.in), "none") {
			*r.out = 0
			continue
		}
		v, err := model.ParseBitrate(*r.in)
		if err != nil || v < minRate || v > maxRate {
			return fmt.Errorf("%s = %q: want a rate from 8k to 10T bit/s, such as \"100M\" or \"1G\", or \"none\"", r.name, *r.in)
		}
		*r.out = v
	}
	if cf.Protocols != nil {
		c.Protocols = 0
		for _, s := range cf.Protocols {
			p, err := parseProtocol(s)
			if err != nil {
				return fmt.Errorf("protocols: %w", err)
			}
			c.Protocols |= p
		}
	}
	return nil
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

// parseNetwork reads a CIDR prefix, or an address as the prefix of that
// one address. A prefix with host bits set ("10.1.2.3/8") is refused:
// it is a typo or a misunderstanding, and either way not what it says.
func parseNetwork(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("network %q: want a CIDR prefix such as 192.0.2.0/24 or 2001:db8::/32, or an address", s)
		}
		if a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("network %q: drop the zone", s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("network %q: want a CIDR prefix such as 192.0.2.0/24 or 2001:db8::/32", s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("network %q has host bits set: did you mean %s?", s, p.Masked())
	}
	if p.Addr().Is4In6() {
		// ::ffff:0:0/96 and the like: clients are matched unmapped.
		return netip.Prefix{}, fmt.Errorf("network %q: write IPv4 networks as IPv4 (a.b.c.d/n)", s)
	}
	return p, nil
}
