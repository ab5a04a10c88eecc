package limits

import (
	"bytes"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

func parse(t *testing.T, src string) Table {
	t.Helper()
	tb, err := Parse([]byte(src), Builtin())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tb
}

func TestExampleFile(t *testing.T) {
	data, err := os.ReadFile("../../deploy/limits.toml")
	if err != nil {
		t.Fatal(err)
	}
	tb := parse(t, string(data))
	for _, c := range []struct {
		addr, class string
	}{
		{"198.51.100.7", "blocked"},
		{"192.0.2.1", "noc"},
		{"2001:db8:1::5", "noc"},     // before members' wider prefix
		{"2001:db8:2::5", "members"}, // members' /32, not noc's /48
		{"::ffff:10.1.2.3", "members"},
		{"10.255.255.255", "members"},
		{"11.0.0.1", "default"},
		{"127.0.0.1", "default"},
	} {
		if got := tb.Match(netip.MustParseAddr(c.addr)).Name; got != c.class {
			t.Errorf("%s: class %s, want %s", c.addr, got, c.class)
		}
	}
	pub := tb.Match(netip.MustParseAddr("203.0.113.1"))
	if pub.MaxRate != model.GbitPerSecond || pub.MaxUDPRate != 100*model.MbitPerSecond || pub.MaxDuration != time.Minute {
		t.Errorf("default class %+v", pub)
	}
	noc := tb.Match(netip.MustParseAddr("192.0.2.1"))
	if noc.MaxRate != 0 || noc.MaxUDPRate != 0 || noc.MaxPendingPerAddr != 16 || noc.Protocols != AllProtocols {
		t.Errorf("noc: caps lifted and the rest inherited from [default], got %+v", noc)
	}
	mem := tb.Match(netip.MustParseAddr("10.0.0.1"))
	if mem.Protocols&NDT7 != 0 || mem.Protocols&Iperf3 == 0 || mem.TestsBound(tb.Server) != 16 || mem.StreamsBound(tb.Server) != 256 {
		t.Errorf("members %+v", mem)
	}
	var out bytes.Buffer
	tb.Format(&out)
	for _, l := range strings.Split(out.String(), "\n") {
		if len(l) > 80 {
			t.Errorf("line over 80 columns: %q", l)
		}
	}
	for _, want := range []string{"class blocked: 198.51.100.0/24\n  deny", "tcp rate   1.00 Gbit/s per test", "protocols  tcp, udp, iperf3\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestInheritance(t *testing.T) {
	tb := parse(t, `
[server]
max_tests = 8
[default]
max_duration = "30s"
[[class]]
name = "a"
networks = ["192.0.2.0/24"]
max_streams = 4
`)
	if tb.Server.MaxTests != 8 || tb.Server.MaxTotalStreams != Builtin().Server.MaxTotalStreams {
		t.Errorf("server %+v", tb.Server)
	}
	a := tb.Classes[0]
	if a.MaxDuration != 30*time.Second || a.MaxStreams != 4 || a.MaxTestsPerAddr != Builtin().Default.MaxTestsPerAddr {
		t.Errorf("class a %+v: inherits [default], then the built-ins", a)
	}
	if tb.Default.MaxStreams != Builtin().Default.MaxStreams {
		t.Errorf("a class's setting leaked into the default: %+v", tb.Default)
	}
	empty := parse(t, "")
	if empty.Server != Builtin().Server || empty.Default.MaxDuration != Builtin().Default.MaxDuration || len(empty.Classes) != 0 {
		t.Errorf("an empty file is not the built-in table: %+v", empty)
	}
}

func TestDenyDefault(t *testing.T) {
	tb := parse(t, `
[default]
action = "deny"
[[class]]
name = "ours"
networks = ["192.0.2.0/24", "2001:db8::1"]
`)
	if !tb.Match(netip.MustParseAddr("203.0.113.1")).Deny {
		t.Error("an address no class holds is not denied")
	}
	for _, a := range []string{"192.0.2.200", "2001:db8::1"} {
		if c := tb.Match(netip.MustParseAddr(a)); c.Deny || c.Name != "ours" {
			t.Errorf("%s: class %+v, want ours, allowed", a, c)
		}
	}
	if tb.Match(netip.MustParseAddr("2001:db8::2")).Name != "default" {
		t.Error("a bare address matched more than itself")
	}
}

func TestBadFiles(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"[default]\nmax_test = 3\n", `line 2: unknown setting "default.max_test"`},
		{"[[class]]\nname = \"x\"\nnetworks = [\"10.1.2.3/8\"]\n", "did you mean 10.0.0.0/8?"},
		{"[[class]]\nname = \"x\"\nnetworks = [\"10.0.0.0/33\"]\n", "want a CIDR prefix"},
		{"[[class]]\nname = \"x\"\nnetworks = [\"::ffff:10.0.0.0/104\"]\n", "write IPv4 networks as IPv4"},
		{"[[class]]\nname = \"x\"\n", `class "x" has no networks`},
		{"[[class]]\nnetworks = [\"10.0.0.0/8\"]\n", "class 1: give it a name"},
		{"[[class]]\nname = \"default\"\nnetworks = [\"10.0.0.0/8\"]\n", "named twice"},
		{"[[class]]\nname = \"x\"\nnetworks = [\"10.0.0.0/8\"]\n[[class]]\nname = \"x\"\nnetworks = [\"11.0.0.0/8\"]\n", "named twice"},
		{"[default]\nmax_duration = \"48h\"\n", "max_duration = 48h0m0s: want 1s to 24h"},
		{"[default]\nmax_duration = \"5\"\n", `max_duration = "5": want a duration`},
		{"[default]\nmax_duration = 5\n", "line 2:"},
		{"[default]\nmax_rate = \"1e99\"\n", `max_rate = "1e99": want a rate from 8k to 10T`},
		{"[default]\nmax_rate = \"0\"\n", `or "none"`},
		{"[default]\nmax_udp_rate = \"fast\"\n", `max_udp_rate = "fast": want a rate`},
		{"[default]\nmax_streams = 0\n", "max_streams = 0: want 1 to 256"},
		{"[default]\nmax_tests_per_address = -1\n", "want 1 to"},
		{"[default]\nmax_tests = -1\n", "max_tests = -1: want 0 to"},
		{"[default]\nprotocols = [\"http\"]\n", `unknown protocol "http"`},
		{"[default]\nprotocols = [\"iperf3\"]\n", "name tcp, udp or both"},
		{"[default]\naction = \"drop\"\n", "use allow or deny"},
		{"[default]\nnetworks = [\"10.0.0.0/8\"]\n", "takes no name or networks"},
		{"[server]\nmax_tests = 0\n", "server max_tests = 0"},
		{"max_tests = 3\n", "unknown setting"},
		{"[default\n", "line 1:"},
	} {
		_, err := Parse([]byte(c.src), Builtin())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one with %q", c.src, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error of more than one line: %q", c.src, err)
		}
	}
}

func TestMatchOrder(t *testing.T) {
	// The first class that holds an address wins, even when a later one
	// names it more precisely: the file's order is the policy.
	tb := parse(t, `
[[class]]
name = "wide"
networks = ["10.0.0.0/8"]
[[class]]
name = "narrow"
networks = ["10.1.0.0/16"]
`)
	if got := tb.Match(netip.MustParseAddr("10.1.2.3")).Name; got != "wide" {
		t.Errorf("class %s, want wide (first match)", got)
	}
}

func TestBuiltinChecks(t *testing.T) {
	tb := Builtin()
	if err := tb.Check(); err != nil {
		t.Fatal(err)
	}
}
