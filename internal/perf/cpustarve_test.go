package perf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// cpuHelperEnv makes the test binary, run again by TestCPUStarvedEnd, a
// tcpscope server in a process of its own (TestCPUHelperServer).
const cpuHelperEnv = "TCPSCOPE_CPUTEST_SERVER"

// starvedQuota is the CPU the starved end's cgroup allows: 10% of one
// core (cpu.max "10000 100000"). At 20% a loaded test machine (a load
// of 11 on 2 CPUs) left the unstarved ends hardly more, and neither end
// was then the bottleneck.
const (
	starvedQuotaUS = 10000
	starvedPeriod  = 100000
)

// TestCPUHelperServer is the server process of TestCPUStarvedEnd: it
// serves on a loopback port, prints the address, and stops when its
// standard input closes (when the test ends, or dies).
func TestCPUHelperServer(t *testing.T) {
	if os.Getenv(cpuHelperEnv) == "" {
		t.Skip("the server process of TestCPUStarvedEnd, run by it")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fmt.Printf("addr %s\n", ln.Addr())
	if err := (Add(&serve.Server{Version: "test"})).Serve(ctx, ln); err != nil {
		t.Error(err)
	}
}

// cpuCgroup is a cgroup this test made, with a CPU quota, and the one
// the test process came from.
type cpuCgroup struct {
	dir  string // the test's cgroup
	home string // this process's own cgroup in the same hierarchy
}

// join moves process pid (all its threads) into the cgroup at dir.
func joinCgroup(dir string, pid int) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(pid)), 0)
}

// starvedCgroup makes a cgroup that allows 10% of one core, removed when
// the test ends (after every process is out of it), or skips the test
// where the cpu controller cannot be used: not root, no cgroup2 with cpu
// in its root's subtree_control and no v1 cpu hierarchy.
func starvedCgroup(t *testing.T) *cpuCgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("limiting an end's CPU needs root (cgroups)")
	}
	mi, err1 := os.ReadFile("/proc/self/mountinfo")
	own, err2 := os.ReadFile("/proc/self/cgroup")
	if err1 != nil || err2 != nil {
		t.Skipf("no cgroups to read: %v, %v", err1, err2)
	}
	ownPath := func(v2 bool) (string, bool) {
		for line := range strings.Lines(string(own)) {
			p := strings.SplitN(strings.TrimSpace(line), ":", 3)
			if len(p) == 3 && ((v2 && p[0] == "0" && p[1] == "") || (!v2 && slices.Contains(strings.Split(p[1], ","), "cpu"))) {
				return p[2], true
			}
		}
		return "", false
	}
	var cg cpuCgroup
	var v2 bool
	for line := range strings.Lines(string(mi)) {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 5 || len(f) < sep+4 || f[3] != "/" {
			continue
		}
		mnt := f[4]
		switch {
		case f[sep+1] == "cgroup2":
			ctl, err := os.ReadFile(filepath.Join(mnt, "cgroup.subtree_control"))
			p, ok := ownPath(true)
			if err != nil || !ok || !slices.Contains(strings.Fields(string(ctl)), "cpu") {
				continue // the cpu controller is not enabled for children here
			}
			cg, v2 = cpuCgroup{dir: mnt, home: filepath.Join(mnt, p)}, true
		case f[sep+1] == "cgroup" && slices.Contains(strings.Split(f[sep+3], ","), "cpu"):
			p, ok := ownPath(false)
			if !ok {
				continue
			}
			cg = cpuCgroup{dir: mnt, home: filepath.Join(mnt, p)}
		default:
			continue
		}
		break
	}
	if cg.dir == "" {
		t.Skip("no cgroup hierarchy with the cpu controller (cgroup2 with cpu in cgroup.subtree_control, or v1's cpu)")
	}
	cg.dir = filepath.Join(cg.dir, fmt.Sprintf("tcpscope-cputest-%d", os.Getpid()))
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		t.Skipf("make a cgroup: %v", err)
	}
	t.Cleanup(func() {
		// Out of it first (the test may have moved itself in), then
		// remove it once the kernel sees it empty: a process that
		// just exited can linger in it for a moment.
		_ = joinCgroup(cg.home, os.Getpid())
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := os.Remove(cg.dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("remove cgroup %s: %v", cg.dir, err)
				return
			}
			time.Sleep(20 * time.Millisecond) // polling the kernel's count, not synchronising
		}
	})
	var err error
	if v2 {
		err = os.WriteFile(filepath.Join(cg.dir, "cpu.max"), fmt.Appendf(nil, "%d %d", starvedQuotaUS, starvedPeriod), 0)
	} else {
		err = os.WriteFile(filepath.Join(cg.dir, "cpu.cfs_period_us"), fmt.Append(nil, starvedPeriod), 0)
		if err == nil {
			err = os.WriteFile(filepath.Join(cg.dir, "cpu.cfs_quota_us"), fmt.Append(nil, starvedQuotaUS), 0)
		}
	}
	if err != nil {
		t.Fatalf("set the cgroup's CPU quota: %v", err)
	}
	return &cg
}

// serverProcess starts a tcpscope server in a process of its own (this
// test binary again), in cgroup dir when dir is not empty, and returns
// its address. It stops when the test ends: its standard input closes,
// and it is killed by its PID if it has not exited after 10 s.
func serverProcess(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCPUHelperServer$")
	cmd.Env = append(os.Environ(), cpuHelperEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	lines := bufio.NewScanner(stdout)
	go func() {
		defer close(exited)
		_ = cmd.Wait()
	}()
	if dir != "" {
		// Into the cgroup before it prints its address: no test runs
		// outside it.
		if err := joinCgroup(dir, cmd.Process.Pid); err != nil {
			t.Fatalf("move the server into its cgroup: %v", err)
		}
	}
	if !lines.Scan() {
		t.Fatalf("the server process printed no address: %v", lines.Err())
	}
	addr, ok := strings.CutPrefix(lines.Text(), "addr ")
	if !ok {
		t.Fatalf("the server process printed %q, not its address", lines.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return addr
}

// medianCPU is an end's median per-interval CPU use, in percent of one
// core, over its measured intervals.
func medianCPU(t *testing.T, e *model.EndReport) float64 {
	t.Helper()
	var xs []float64
	for _, iv := range e.Intervals {
		if iv.CPU == nil {
			t.Fatalf("%s interval %d has no CPU use", e.Side, iv.Index)
		}
		xs = append(xs, iv.CPU.Total)
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// cpuSeries is an end's per-interval CPU use and throttling, for a
// failure's message.
func cpuSeries(e *model.EndReport) string {
	var out []string
	for _, iv := range e.Intervals {
		if iv.CPU != nil {
			out = append(out, fmt.Sprintf("%.1f%% (throttled %v)", iv.CPU.Total, iv.CPU.Throttled))
		}
	}
	return strings.Join(out, ", ")
}

// TestCPUStarvedEnd starves one end of CPU for real, in a cgroup that
// allows it 10% of one core, and checks the diagnosis names that end's
// CPU as the bottleneck, as sender and as receiver, at either end, with
// the starved end's quota and per-interval CPU beside it; and that the
// same tests between two unstarved processes name no CPU.
func TestCPUStarvedEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starves an end of CPU for seconds (and needs root)")
	}
	cg := starvedCgroup(t)
	free := serverProcess(t, "")
	starved := serverProcess(t, cg.dir)
	cfg := model.TestConfig{Duration: 3 * time.Second, Interval: 500 * time.Millisecond}
	for _, c := range []struct {
		name    string
		starve  model.Side // "" for none
		reverse bool
	}{
		{"unstarved-upload", "", false},
		{"unstarved-download", "", true},
		{"server-receiver", model.ServerSide, false},
		{"server-sender", model.ServerSide, true},
		{"client-sender", model.ClientSide, false},
		{"client-receiver", model.ClientSide, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := free
			if c.starve == model.ServerSide {
				addr = starved
			}
			if c.starve == model.ClientSide {
				if err := joinCgroup(cg.dir, os.Getpid()); err != nil {
					t.Fatalf("move the client into the cgroup: %v", err)
				}
				t.Cleanup(func() {
					if err := joinCgroup(cg.home, os.Getpid()); err != nil {
						t.Errorf("move the client out of the cgroup: %v", err)
					}
				})
			}
			cfg := cfg
			cfg.Reverse = c.reverse
			run, err := (&Client{Version: "test"}).Run(context.Background(), addr, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if c.starve == model.ClientSide {
				// Out before the diagnosis: only the test ran starved.
				if err := joinCgroup(cg.home, os.Getpid()); err != nil {
					t.Fatal(err)
				}
			}
			fs := diagnose.Test(run, diagnose.Options{})
			d := run.Summary[0]
			t.Logf("%s: %s, CPU %% of one core (median per interval): client %.1f, server %.1f; quotas client %v, server %v; verdict %s: %s",
				c.name, d.Goodput.V, medianCPU(t, &run.Client), medianCPU(t, &run.Remote), run.Client.CPUQuota, run.Remote.CPUQuota, fs[0].ID, fs[0].Summary)
			if c.starve == "" {
				for _, f := range fs {
					if f.ID == "cpu-bound" {
						t.Fatalf("unstarved ends diagnosed CPU-bound: %s", f.Summary)
					}
				}
				return
			}
			end, other := &run.Client, &run.Remote
			if c.starve == model.ServerSide {
				end, other = other, end
			}
			if q, ok := end.CPUQuota.Get(); !ok || q != float64(starvedQuotaUS)/starvedPeriod {
				t.Fatalf("starved %s reports a quota of %v cores, want %v", c.starve, end.CPUQuota, float64(starvedQuotaUS)/starvedPeriod)
			}
			if other.CPUQuota.OK {
				t.Fatalf("unstarved %s reports a quota of %v", other.Side, other.CPUQuota)
			}
			// The kernel holds the cgroup to its quota; a little over it
			// is getrusage's and the period's rounding at the edges.
			if m, q := medianCPU(t, end), 100*float64(starvedQuotaUS)/starvedPeriod; m > 1.5*q {
				t.Fatalf("starved %s used %.1f%% of one core per interval, over its %.0f%% quota", c.starve, m, q)
			}
			role := model.RoleOf(c.starve, d.Direction)
			f := fs[0]
			if f.ID != "cpu-bound" || !f.Primary || !strings.HasPrefix(f.Summary, fmt.Sprintf("The %s's CPU", role)) ||
				len(f.Evidence) < 2 || f.Evidence[1].Source != string(c.starve) {
				t.Fatalf("verdict %s (%s), evidence %+v; per-interval CPU: client %s, server %s: want cpu-bound naming the %s (%s)",
					f.ID, f.Summary, f.Evidence, cpuSeries(&run.Client), cpuSeries(&run.Remote), c.starve, role)
			}
		})
	}
}
