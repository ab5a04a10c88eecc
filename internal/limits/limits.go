// Package limits is a test server's admission policy: bounds for the
// whole server, and classes of client addresses, each with its own
// bounds, in the spirit of perfSONAR's limits.conf. A class names
// networks (CIDR prefixes); the first class whose networks hold a
// client's address is the client's class, and an address no class names
// gets the default class.
//
// The package is pure: it reads and checks a limits file and answers
// "which class is this address in". The server (package perf) counts
// tests and streams against the answers.
package limits

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Bounds on the values a limits file may set: beyond them a value is a
// mistake (a duration in the wrong unit, a rate with an extra prefix),
// not a policy.
const (
	// MaxDurationBound matches the longest test a client may ask for.
	MaxDurationBound = 24 * time.Hour
	minDuration      = time.Second
	maxCount         = 1 << 20
	// maxStreamsBound is a test's most streams: 128 each way.
	maxStreamsBound = 256
	minRate         = 8 * model.KbitPerSecond
	maxRate         = 10 * model.TbitPerSecond
)

// Protocols is a set of what a class may test with.
type Protocols uint8

// The protocols a class can allow. TCP and UDP are a test's transport,
// whatever the client; Iperf3 admits stock iperf3 clients (for the
// transports allowed) and NDT7 the ndt7 protocol.
const (
	TCP Protocols = 1 << iota
	UDP
	Iperf3
	NDT7

	AllProtocols = TCP | UDP | Iperf3 | NDT7
)

var protocolNames = []struct {
	p    Protocols
	name string
}{{TCP, "tcp"}, {UDP, "udp"}, {Iperf3, "iperf3"}, {NDT7, "ndt7"}}

// parseProtocol reads one protocol's name.
func parseProtocol(s string) (Protocols, error) {
	for _, n := range protocolNames {
		if strings.EqualFold(s, n.name) {
			return n.p, nil
		}
	}
	return 0, fmt.Errorf("unknown protocol %q (use tcp, udp, iperf3 or ndt7)", s)
}

// String lists the protocols' names, or says "none".
func (p Protocols) String() string {
	var names []string
	for _, n := range protocolNames {
		if p&n.p != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Server bounds the server as a whole, whatever the classes allow.
type Server struct {
	MaxTests        int // tests at once
	MaxTotalStreams int // streams of all running tests together
	MaxPending      int // connections not yet part of a test
}

// Class is the policy for a set of client addresses.
type Class struct {
	Name string
	// Networks are the addresses the class holds (empty for the
	// default class: every address no other class holds).
	Networks []netip.Prefix
	// Deny refuses the class's connections at once; the other fields
	// then do not matter.
	Deny bool
	// MaxTests and MaxTotalStreams bound the class's running tests and
	// their streams together; 0: only the server's bounds apply.
	MaxTests        int
	MaxTotalStreams int
	// MaxTestsPerAddr bounds one address's tests at once, those still
	// opening their streams included.
	MaxTestsPerAddr int
	// MaxStreams bounds one test's streams, both directions counted.
	MaxStreams int
	// MaxDuration bounds one test, its omitted start included.
	MaxDuration time.Duration
	// MaxRate caps one TCP test, all its streams together: the server
	// paces what it sends (SO_MAX_PACING_RATE) and reads what it
	// receives no faster, and refuses a -b that asks for more. 0: no cap.
	MaxRate model.Bitrate
	// MaxUDPRate caps one UDP test's -b, all its streams together (the
	// server sends at -b; a client that sends faster than it said
	// floods only its own path). 0: no cap, -b 0 ("as fast as
	// possible") allowed.
	MaxUDPRate model.Bitrate
	// Protocols are what the class may test with.
	Protocols Protocols
	// MaxPendingPerAddr bounds one address's connections that are not
	// yet part of a test.
	MaxPendingPerAddr int
}

// Table is a server's whole policy.
type Table struct {
	Server  Server
	Classes []Class // in the file's order: the first match wins
	Default Class   // for addresses no class holds
	// Source names where the table came from, for messages.
	Source string
}

// Builtin is the policy of a server given no limits: generous enough
// for any single user, bounded enough that no one address holds the
// server.
func Builtin() Table {
	return Table{
		Server: Server{MaxTests: 32, MaxTotalStreams: 512, MaxPending: 1024},
		Default: Class{
			Name:              "default",
			MaxTestsPerAddr:   4,
			MaxStreams:        128,
			MaxDuration:       5 * time.Minute,
			Protocols:         AllProtocols,
			MaxPendingPerAddr: 16,
		},
		Source: "built-in defaults",
	}
}

// Match is the class of a client address: the first class whose
// networks hold it, or the default class. An IPv4 address reached over
// an IPv6 socket (::ffff:a.b.c.d) matches as the IPv4 address it is.
func (t *Table) Match(a netip.Addr) *Class {
	a = a.Unmap()
	for i := range t.Classes {
		for _, p := range t.Classes[i].Networks {
			if p.Contains(a) {
				return &t.Classes[i]
			}
		}
	}
	return &t.Default
}

// Check says what is wrong with a table, naming the class and setting.
func (t *Table) Check() error {
	s := t.Server
	for _, v := range []struct {
		name string
		n    int
	}{{"server max_tests", s.MaxTests}, {"server max_total_streams", s.MaxTotalStreams}, {"server max_pending", s.MaxPending}} {
		if v.n < 1 || v.n > maxCount {
			return fmt.Errorf("%s = %d: want 1 to %d", v.name, v.n, maxCount)
		}
	}
	seen := map[string]bool{t.Default.Name: true}
	for i := range t.Classes {
		c := &t.Classes[i]
		if c.Name == "" {
			return fmt.Errorf("class %d has no name", i+1)
		}
		if seen[c.Name] {
			return fmt.Errorf("class %q named twice (or as the default)", c.Name)
		}
		seen[c.Name] = true
		if len(c.Networks) == 0 {
			return fmt.Errorf("class %q has no networks: it would match nobody", c.Name)
		}
		if err := c.check(); err != nil {
			return fmt.Errorf("class %q: %w", c.Name, err)
		}
	}
	if err := t.Default.check(); err != nil {
		return fmt.Errorf("default class: %w", err)
	}
	return nil
}

func (c *Class) check() error {
	if c.Deny {
		return nil
	}
	for _, v := range []struct {
		name     string
		n        int
		zeroOK   bool
		maxValue int
	}{
		{"max_tests", c.MaxTests, true, maxCount},
		{"max_total_streams", c.MaxTotalStreams, true, maxCount},
		{"max_tests_per_address", c.MaxTestsPerAddr, false, maxCount},
		{"max_streams", c.MaxStreams, false, maxStreamsBound},
		{"max_pending_per_address", c.MaxPendingPerAddr, false, maxCount},
	} {
		if (v.n == 0 && !v.zeroOK) || v.n < 0 || v.n > v.maxValue {
			low := 1
			if v.zeroOK {
				low = 0
			}
			return fmt.Errorf("%s = %d: want %d to %d", v.name, v.n, low, v.maxValue)
		}
	}
	if c.MaxDuration < minDuration || c.MaxDuration > MaxDurationBound {
		return fmt.Errorf("max_duration = %v: want 1s to 24h", c.MaxDuration)
	}
	for _, r := range []struct {
		name string
		v    model.Bitrate
	}{{"max_rate", c.MaxRate}, {"max_udp_rate", c.MaxUDPRate}} {
		if r.v != 0 && (r.v < minRate || r.v > maxRate) {
			return fmt.Errorf("%s = %v: want 8k to 10T (bit/s), or \"none\"", r.name, r.v)
		}
	}
	if c.Protocols&(TCP|UDP) == 0 {
		return fmt.Errorf("protocols = [%s]: name tcp, udp or both (or deny the class)", c.Protocols)
	}
	return nil
}

// TestsBound is how many tests the class may run at once: its own bound,
// or the server's.
func (c *Class) TestsBound(s Server) int {
	if c.MaxTests > 0 {
		return min(c.MaxTests, s.MaxTests)
	}
	return s.MaxTests
}

// StreamsBound is how many streams the class's tests may run at once.
func (c *Class) StreamsBound(s Server) int {
	if c.MaxTotalStreams > 0 {
		return min(c.MaxTotalStreams, s.MaxTotalStreams)
	}
	return s.MaxTotalStreams
}
