package diagnose

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/hostinfo"
	"github.com/tcpscope/tcpscope/internal/model"
)

func fixture(t *testing.T, name string) model.HostInfo {
	t.Helper()
	root := filepath.Join("..", "hostinfo", "testdata", name)
	info, err := hostinfo.Reader{Root: root, Qdiscs: hostinfo.FixtureQdiscs(root), Offloads: hostinfo.FixtureOffloads(root)}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func ids(fs []model.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}

func TestHostAudit(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		o       HostOptions
		want    []string // every one must be found
		not     []string // none of these
	}{
		{"mistuned", HostOptions{Target: 100 * model.MbitPerSecond, RTT: 80 * time.Millisecond},
			[]string{"host-rmem-small", "host-wmem-small", "host-rmem_max-small", "host-wmem_max-small", "host-autotuning-off",
				"host-wscale-off", "host-sack-off", "host-congestion-control", "host-half-duplex", "host-nic-errors",
				"host-offloads-off", "host-txqueuelen-short"},
			[]string{"host-buffers-oversized", "host-mtu-small"}},
		// The development VM: bbr, stock buffers, MTU 1400, no link speed.
		{"vm-6.18", HostOptions{}, []string{"host-mtu-small", "host-buffer-reach", "host-qdisc-fifo"},
			[]string{"host-rmem-small", "host-congestion-control", "host-wscale-off", "host-nic-errors", "host-offloads-off"}},
		// This VM lets receive buffers grow to 32 MiB, send buffers to 4 MiB:
		// short of 1 Gbit/s at 300 ms (2 × 37.5 MB).
		{"vm-6.18", HostOptions{Target: model.GbitPerSecond, RTT: 300 * time.Millisecond},
			[]string{"host-rmem-small", "host-wmem-small"}, []string{"host-buffer-reach"}},
		// Seed 002: 256 MiB buffers on a 10 Mbit/s link.
		{"oversized", HostOptions{RTT: 30 * time.Millisecond}, []string{"host-buffers-oversized"}, []string{"host-rmem-small"}},
		// No target and no link speed (this VM): the buffers, 32 MiB,
		// judged against what a test measured over 20 ms, 9.5 Mbit/s.
		{"vm-6.18", HostOptions{RTT: 20 * time.Millisecond, Measured: 9_500_000}, []string{"host-buffers-oversized"}, nil},
		// A target given wins over the measured rate.
		{"vm-6.18", HostOptions{Target: model.GbitPerSecond, RTT: 20 * time.Millisecond, Measured: 9_500_000}, nil, []string{"host-buffers-oversized"}},
		// A target above the link's speed.
		{"oversized", HostOptions{Target: 100 * model.MbitPerSecond, RTT: 30 * time.Millisecond}, []string{"host-link-slow"}, nil},
	} {
		fs := Host(fixture(t, tc.fixture), tc.o)
		got := ids(fs)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s %+v: findings %v lack %s", tc.fixture, tc.o, got, w)
			}
		}
		for _, n := range tc.not {
			if slices.Contains(got, n) {
				t.Errorf("%s %+v: findings %v include %s", tc.fixture, tc.o, got, n)
			}
		}
		for i := 1; i < len(fs); i++ {
			if fs[i-1].Severity.Rank() > fs[i].Severity.Rank() {
				t.Errorf("%s: %s before %s", tc.fixture, fs[i-1].Severity, fs[i].Severity)
			}
		}
	}
}

func TestSysctlConf(t *testing.T) {
	fs := Host(fixture(t, "mistuned"), HostOptions{Target: 100 * model.MbitPerSecond, RTT: 80 * time.Millisecond})
	conf := SysctlConf(fs)
	for _, want := range []string{
		"net.ipv4.tcp_rmem = 4096 87380 2000000\n",
		"net.ipv4.tcp_wmem = 4096 16384 2000000\n",
		"net.ipv4.tcp_window_scaling = 1\n",
		"net.ipv4.tcp_sack = 1\n",
		"net.ipv4.tcp_congestion_control = bbr\n",
		"net.core.rmem_max = 2000000\n",
		"net.ipv4.tcp_moderate_rcvbuf = 1\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("sysctl.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "ethtool") || strings.Count(conf, "net.ipv4.tcp_rmem =") != 1 {
		t.Errorf("sysctl.conf has non-sysctl fixes or duplicates:\n%s", conf)
	}
}

func TestMergeAndByLayer(t *testing.T) {
	fs := []model.Finding{
		{ID: "wscale-off", Primary: true, Direction: model.ClientToServer, Layer: model.LayerTransport, Severity: model.Critical},
		{ID: "sack-off", Direction: model.ClientToServer, Layer: model.LayerTransport, Severity: model.Warning},
		{ID: "wscale-off", Primary: true, Direction: model.ServerToClient, Layer: model.LayerTransport, Severity: model.Critical},
		{ID: "sack-off", Direction: model.ServerToClient, Layer: model.LayerTransport, Severity: model.Warning},
		{ID: "host-nic-errors", Layer: model.LayerPhysical, Severity: model.Warning},
		{ID: "host-rmem-small", Layer: model.LayerHost, Severity: model.Critical},
	}
	m := Merge(fs)
	if got := ids(m); strings.Join(got, " ") != "wscale-off sack-off wscale-off host-nic-errors host-rmem-small" {
		t.Errorf("Merge: %v", got)
	}
	if m[1].Direction != "" {
		t.Errorf("a finding of both directions kept direction %q", m[1].Direction)
	}
	if got := ids(ByLayer(m)); strings.Join(got, " ") != "host-rmem-small host-nic-errors wscale-off wscale-off sack-off" {
		t.Errorf("ByLayer: %v", got)
	}
}

// A buffer fix keeps the host's own minimum and default, and Linux's
// where the host's text is not a triple of sizes.
func TestKeepBounds(t *testing.T) {
	for v, want := range map[string]string{
		"8192 262144 6291456": "8192 262144 1000",
		"4096 87380":          "4096 131072 1000",
		"a b c":               "4096 131072 1000",
		"":                    "4096 131072 1000",
		"9000 100 200":        "4096 131072 1000",
	} {
		if got := keepBounds(v, model.LinuxRmem).WithMax(1000).String(); got != want {
			t.Errorf("%q: %q, want %q", v, got, want)
		}
	}
}
