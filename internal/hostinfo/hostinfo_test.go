package hostinfo

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

func read(t *testing.T, name string) model.HostInfo {
	t.Helper()
	root := filepath.Join("testdata", name)
	info, err := Reader{Root: root, Qdiscs: FixtureQdiscs(root), Offloads: FixtureOffloads(root)}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// The fixture recorded on the development VM (scripts in testdata/README).
func TestReadRecorded(t *testing.T) {
	info := read(t, "vm-6.18")
	if info.Kernel == "" || info.Sysctls["net.ipv4.tcp_rmem"] == "" || info.Sysctls["net.ipv4.tcp_congestion_control"] == "" {
		t.Fatalf("sysctls: %v", info.Sysctls)
	}
	var eth, lo *model.Interface
	for i := range info.Interfaces {
		switch info.Interfaces[i].Name {
		case "eth0":
			eth = &info.Interfaces[i]
		case "lo":
			lo = &info.Interfaces[i]
		}
	}
	if eth == nil || lo == nil {
		t.Fatalf("interfaces: %+v", info.Interfaces)
	}
	if eth.MTU != 1400 || eth.TxQueueLen != 1000 || !eth.Up || eth.Speed.OK || eth.Duplex != "" ||
		eth.Driver != "virtio_net" || eth.Qdisc != "pfifo_fast" || eth.Loopback {
		t.Errorf("eth0 = %+v", *eth)
	}
	if !lo.Loopback || !lo.Up || lo.Qdisc != "noqueue" {
		t.Errorf("lo = %+v", *lo)
	}
}

func TestReadMistuned(t *testing.T) {
	info := read(t, "mistuned")
	if info.Sysctls["net.ipv4.tcp_window_scaling"] != "0" || info.Sysctls["net.ipv4.tcp_rmem"] != "4096 87380 174760" {
		t.Errorf("sysctls: %v", info.Sysctls)
	}
	for _, in := range info.Interfaces {
		if in.Name == "eth0" && (in.Speed.V != model.GbitPerSecond || in.Duplex != "half" || in.RxCRCErrors != 1532 ||
			in.Offloads != model.Some(model.Offloads{GSO: true})) {
			t.Errorf("eth0 = %+v", in)
		}
	}
}

func TestReadErrors(t *testing.T) {
	if _, err := (Reader{Root: t.TempDir()}).Read(context.Background()); err == nil {
		t.Error("an empty root read without error")
	}
	// A kernel without some sysctls: they are absent, not errors.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc/sys/net/ipv4"), 0o755)
	os.MkdirAll(filepath.Join(root, "sys/class/net"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/sys/net/ipv4/tcp_sack"), []byte("1\n"), 0o644)
	info, err := Reader{Root: root, Qdiscs: FixtureQdiscs(root), Offloads: FixtureOffloads(root)}.Read(context.Background())
	if err != nil || len(info.Sysctls) != 1 || info.Sysctls["net.ipv4.tcp_sack"] != "1" {
		t.Errorf("sparse tree: %v, %v", info.Sysctls, err)
	}
	if _, err := parseQdiscs([]byte("not json")); err == nil {
		t.Error("bad tc output parsed")
	}
}

// This machine, read for real: whatever it has, the audit reads it.
func TestReadThisHost(t *testing.T) {
	info, err := Reader{}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Sysctls["net.ipv4.tcp_rmem"] == "" || len(info.Interfaces) == 0 {
		t.Errorf("this host: %+v", info)
	}
	// Loopback answers the ethtool ioctls on every Linux.
	for _, in := range info.Interfaces {
		if in.Loopback && !in.Offloads.OK {
			t.Errorf("loopback's offloads not read: %+v", in)
		}
	}
}

// The congestion controls -C completes are the kernel's available list;
// a host whose /proc cannot be read has none.
func TestCongestionControls(t *testing.T) {
	got := Reader{Root: "testdata/vm-6.18"}.CongestionControls()
	if !slices.Equal(got, []string{"reno", "bbr", "cubic"}) {
		t.Errorf("vm-6.18: %q", got)
	}
	if got := (Reader{Root: t.TempDir()}).CongestionControls(); got != nil {
		t.Errorf("an empty root: %q", got)
	}
}
