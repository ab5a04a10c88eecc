package hostinfo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Keys lists the sysctls the audit reads, in a stable order.
func Keys() []string {
	return []string{
		"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.rmem_max", "net.core.wmem_max",
		"net.core.rmem_default", "net.core.wmem_default",
		"net.ipv4.tcp_window_scaling", "net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps",
		"net.ipv4.tcp_moderate_rcvbuf", "net.ipv4.tcp_congestion_control",
		"net.ipv4.tcp_available_congestion_control", "net.ipv4.tcp_mtu_probing",
		"net.ipv4.tcp_no_metrics_save", "net.core.default_qdisc", "net.ipv4.tcp_adv_win_scale",
		"net.core.netdev_max_backlog", "net.ipv4.tcp_ecn",
	}
}

// Reader reads a host. The zero value reads this machine.
type Reader struct {
	// Root is where /proc and /sys are found; "" means "/".
	Root string
	// Qdiscs returns `tc -j qdisc show` output; nil runs tc (and without
	// tc the qdiscs stay unknown).
	Qdiscs func(ctx context.Context) ([]byte, error)
	// Offloads reads an interface's offloads; nil uses the ethtool
	// ioctls (Offloads), which only work on this machine's own devices.
	Offloads func(name string) (model.Offloads, error)
}

// CongestionControls lists the congestion controls the kernel has
// (net.ipv4.tcp_available_congestion_control), the names -C takes; none
// when it cannot be read.
func (r Reader) CongestionControls() []string {
	root := r.Root
	if root == "" {
		root = "/"
	}
	b, err := os.ReadFile(filepath.Join(root, "proc/sys/net/ipv4/tcp_available_congestion_control"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// Read audits the host. Files the kernel lacks are skipped; only a
// missing /proc/sys or /sys/class/net is an error.
func (r Reader) Read(ctx context.Context) (model.HostInfo, error) {
	root := r.Root
	if root == "" {
		root = "/"
	}
	info := model.HostInfo{Sysctls: map[string]string{}}
	if b, err := os.ReadFile(filepath.Join(root, "proc/sys/kernel/osrelease")); err == nil {
		info.Kernel = strings.TrimSpace(string(b))
	}
	sys := filepath.Join(root, "proc/sys")
	if _, err := os.Stat(sys); err != nil {
		return info, fmt.Errorf("host audit: %w", err)
	}
	for _, k := range Keys() {
		b, err := os.ReadFile(filepath.Join(sys, strings.ReplaceAll(k, ".", "/")))
		if err != nil {
			continue // not in this kernel (or not in this namespace)
		}
		info.Sysctls[k] = strings.Join(strings.Fields(string(b)), " ")
	}
	netDir := filepath.Join(root, "sys/class/net")
	ents, err := os.ReadDir(netDir)
	if err != nil {
		return info, fmt.Errorf("host audit: %w", err)
	}
	for _, e := range ents {
		info.Interfaces = append(info.Interfaces, readIface(filepath.Join(netDir, e.Name()), e.Name()))
	}
	sort.Slice(info.Interfaces, func(i, j int) bool { return info.Interfaces[i].Name < info.Interfaces[j].Name })

	off := r.Offloads
	if off == nil {
		off = Offloads
	}
	for i := range info.Interfaces {
		if o, err := off(info.Interfaces[i].Name); err == nil {
			info.Interfaces[i].Offloads = model.Some(o)
		}
	}
	qd := r.Qdiscs
	if qd == nil {
		qd = runTC
	}
	if out, err := qd(ctx); err == nil {
		roots, err := parseQdiscs(out)
		if err != nil {
			return info, fmt.Errorf("host audit: %w", err)
		}
		for i := range info.Interfaces {
			info.Interfaces[i].Qdisc = roots[info.Interfaces[i].Name]
		}
	}
	return info, nil
}

func readIface(dir, name string) model.Interface {
	str := func(f string) string {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	num := func(f string) int64 {
		v, err := strconv.ParseInt(str(f), 10, 64)
		if err != nil {
			return -1
		}
		return v
	}
	cnt := func(f string) uint64 { return uint64(max(num(f), 0)) }
	in := model.Interface{
		Name: name, MTU: int(max(num("mtu"), 0)), TxQueueLen: int(max(num("tx_queue_len"), 0)),
		Loopback: str("type") == "772", Up: str("operstate") == "up" || (str("type") == "772" && str("operstate") == "unknown"),
		RxErrors: cnt("statistics/rx_errors"), TxErrors: cnt("statistics/tx_errors"),
		RxDropped: cnt("statistics/rx_dropped"), TxDropped: cnt("statistics/tx_dropped"),
		RxCRCErrors: cnt("statistics/rx_crc_errors"), CarrierChanges: cnt("carrier_changes"),
	}
	// speed is in Mbit/s, -1 (or an error on reading) when unknown.
	if s := num("speed"); s > 0 {
		in.Speed = model.Some(model.Bitrate(s) * model.MbitPerSecond)
	}
	switch d := str("duplex"); d {
	case "full", "half":
		in.Duplex = d
	}
	if l, err := os.Readlink(filepath.Join(dir, "device/driver")); err == nil {
		in.Driver = filepath.Base(l)
	}
	return in
}

func runTC(ctx context.Context) ([]byte, error) {
	path, err := exec.LookPath("tc")
	if err != nil {
		return nil, err
	}
	return exec.CommandContext(ctx, path, "-j", "qdisc", "show").Output()
}

// parseQdiscs maps each device to its root qdisc's kind.
func parseQdiscs(b []byte) (map[string]string, error) {
	var list []struct {
		Kind string `json:"kind"`
		Dev  string `json:"dev"`
		Root bool   `json:"root"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("tc -j qdisc show: %w", err)
	}
	out := map[string]string{}
	for _, q := range list {
		if q.Root {
			out[q.Dev] = q.Kind
		}
	}
	return out, nil
}

// FixtureOffloads reads the offloads of a fixture tree from
// root/offloads.json (a JSON object by interface name, as recorded with
// `ethtool -k`); interfaces it does not list have none known.
func FixtureOffloads(root string) func(string) (model.Offloads, error) {
	return func(name string) (model.Offloads, error) {
		b, err := os.ReadFile(filepath.Join(root, "offloads.json"))
		if err != nil {
			return model.Offloads{}, err
		}
		var m map[string]model.Offloads
		if err := json.Unmarshal(b, &m); err != nil {
			return model.Offloads{}, fmt.Errorf("%s/offloads.json: %w", root, err)
		}
		o, ok := m[name]
		if !ok {
			return model.Offloads{}, fmt.Errorf("%s: no offloads recorded", name)
		}
		return o, nil
	}
}

// FixtureQdiscs reads the qdiscs of a fixture tree from root/tc-qdisc.json,
// as `tc -j qdisc show` wrote it on the machine the tree was recorded on.
func FixtureQdiscs(root string) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(root, "tc-qdisc.json"))
		if errors.Is(err, fs.ErrNotExist) {
			return []byte("[]"), nil
		}
		return b, err
	}
}
