package diagnose

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// settings is a host's TCP buffer settings for the tests.
func settings(rmem, wmem model.BufferBounds, rmemMax, wmemMax model.Bytes, auto bool) *model.TCPSettings {
	return &model.TCPSettings{Rmem: model.Some(rmem), Wmem: model.Some(wmem), RmemMax: model.Some(rmemMax), WmemMax: model.Some(wmemMax),
		Autotuning: model.Some(auto), WindowScaling: model.Some(true)}
}

// stock is this kernel's defaults.
func stock() *model.TCPSettings {
	return settings(model.BufferBounds{Min: 4096, Default: 131072, Max: 6291456}, model.BufferBounds{Min: 4096, Default: 16384, Max: 4194304}, 212992, 212992, true)
}

func commands(f model.Finding) []string {
	var out []string
	for _, fx := range f.Fix {
		out = append(out, fx.Where+": "+fx.Command)
	}
	return out
}

func findingOf(t *testing.T, fs []model.Finding, id string) model.Finding {
	t.Helper()
	for _, f := range fs {
		if f.ID == id {
			return f
		}
	}
	t.Fatalf("no %s among %v", id, ids(fs))
	return model.Finding{}
}

// TestFixesFromSettings: a window or buffer fix is computed from the
// ends' own settings: it keeps the minimum and default it finds, turns
// autotuning on where it is off, raises the cap only for an application
// that pins its buffer and only when the cap is short, says so when the
// kernel already allows the buffer, and raises the other end where it
// would hold the new window back. (Before, every fix wrote "4096 131072
// N" whatever the host had, and a receiver's larger window was predicted
// to carry its rate past a sender buffer that could not hold it.)
func TestFixesFromSettings(t *testing.T) {
	small := model.BufferBounds{Min: 4096, Default: 65536, Max: 131072}
	for _, tc := range []struct {
		name       string
		rec        string
		rcv, snd   *model.TCPSettings
		window     model.Bytes // -w
		want, not_ []string
	}{
		{"tcp_rmem's default kept", "rwnd-limited", settings(model.BufferBounds{Min: 8192, Default: 87380, Max: 131072}, small, 212992, 212992, true), stock(), 0,
			[]string{`receiver (the server): sysctl -w net.ipv4.tcp_rmem="8192 87380 1048576"`}, []string{"moderate_rcvbuf", "rmem_max", "sender"}},
		{"autotuning off", "rwnd-limited", settings(small, small, 212992, 212992, false), stock(), 0,
			[]string{"tcp_moderate_rcvbuf=1", `tcp_rmem="4096 65536 1048576"`}, nil},
		{"the sender's buffer too", "rwnd-limited", settings(small, small, 212992, 212992, true), settings(small, small, 212992, 212992, true), 0,
			[]string{`receiver (the server): sysctl -w net.ipv4.tcp_rmem="4096 65536 1048576"`, `sender (this client): sysctl -w net.ipv4.tcp_wmem="4096 65536 1048576" (this end allows 128 KiB`}, nil},
		{"already allowed", "rwnd-limited", stock(), stock(), 0,
			[]string{"application: net.ipv4.tcp_rmem's maximum (6291456) already allows 1.00 MiB"}, []string{"sysctl -w net.ipv4.tcp_rmem"}},
		{"-w pinned, the cap short", "rwnd-limited", stock(), stock(), 128 * model.KiB,
			[]string{"sysctl -w net.core.rmem_max=1048576", "setsockopt(SO_RCVBUF, 1048576)"}, []string{"tcp_rmem"}},
		{"-w pinned, the cap enough", "rwnd-limited", settings(small, small, 16<<20, 16<<20, true), stock(), 128 * model.KiB,
			[]string{"setsockopt(SO_RCVBUF, 1048576)"}, []string{"rmem_max"}},
		{"send buffer, wmem's default kept", "sndbuf-limited", stock(), settings(small, model.BufferBounds{Min: 4096, Default: 32768, Max: 65536}, 212992, 212992, true), 0,
			[]string{`sender (this client): sysctl -w net.ipv4.tcp_wmem="4096 32768 `}, []string{"receiver"}},
		{"no settings read", "rwnd-limited", nil, nil, 0,
			[]string{`tcp_rmem="4096 131072 1048576" (the kernel's minimum and default: this end's were not read)`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := load(t, tc.rec)
			run.Remote.Settings, run.Client.Settings = tc.rcv, tc.snd
			run.Config.Window = tc.window
			f := findingOf(t, Test(run, Options{}), tc.rec)
			got := strings.Join(commands(f), "\n")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("fixes lack %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not_ {
				if strings.Contains(got, n) {
					t.Errorf("fixes have %q:\n%s", n, got)
				}
			}
			if p := FixProblems(run, []model.Finding{f}); len(p) > 0 {
				t.Errorf("fix problems: %v", p)
			}
		})
	}
}

// TestFixProblemsOverRecordings: on every recording, under the stock
// kernel's settings at both ends and under small ones, no fix lowers a
// setting or sets it to what it is, and no window or buffer fix predicts
// less than the transfer got.
func TestFixProblemsOverRecordings(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	small := model.BufferBounds{Min: 4096, Default: 65536, Max: 262144}
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, set := range []*model.TCPSettings{nil, stock(), settings(small, small, 212992, 212992, true), settings(small, small, 212992, 212992, false)} {
			run := load(t, name)
			if set != nil && !run.Remote.NoKernelState {
				run.Remote.Settings = set
			}
			if set != nil && !run.Client.NoKernelState {
				run.Client.Settings = set
			}
			if p := FixProblems(run, Test(run, Options{})); len(p) > 0 {
				t.Errorf("%s: %v", name, p)
			}
		}
	}
}

// TestFixProblems: the checker sees a fix that lowers a setting, one that
// sets it to what it is, and a prediction at or under the rate got.
func TestFixProblems(t *testing.T) {
	run := load(t, "rwnd-limited")
	run.Remote.Settings = stock()
	f := model.Finding{ID: "rwnd-limited", Primary: true, Direction: model.ClientToServer, Predicted: model.Some[model.Bitrate](1),
		Fix: []model.Fix{
			{Where: "receiver (the server)", Command: `sysctl -w net.ipv4.tcp_rmem="4096 131072 1048576"`},
			{Where: "receiver (the server)", Command: "sysctl -w net.core.rmem_max=212992"},
		}}
	p := strings.Join(FixProblems(run, []model.Finding{f}), "\n")
	for _, w := range []string{"lowers net.ipv4.tcp_rmem from 6291456 to 1048576", "sets net.core.rmem_max to what it is", "predicts 1.00 bit/s"} {
		if !strings.Contains(p, w) {
			t.Errorf("problems lack %q:\n%s", w, p)
		}
	}
	if slices.Contains(FixProblems(run, nil), "") {
		t.Error("no findings, a problem")
	}
}
