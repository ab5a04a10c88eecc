package engine

import (
	"io/fs"
	"math"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// TestCPUQuota reads cgroup quotas from recorded /proc and /sys files:
// v2's cpu.max, v1's cfs quota over its period, the tightest of a cgroup
// and its ancestors, and none where every level says "max" or -1.
func TestCPUQuota(t *testing.T) {
	const v2mounts = "30 25 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	const v1mounts = "30 25 0:26 / /sys/fs/cgroup/unified rw shared:4 - cgroup2 cgroup2 rw\n" +
		"31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw shared:5 - cgroup cgroup rw,cpu,cpuacct\n" +
		"32 25 0:28 / /sys/fs/cgroup/memory rw shared:6 - cgroup cgroup rw,memory\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  float64 // 0: no quota
	}{
		{"v2 own", map[string]string{
			"/proc/self/cgroup":                         "0::/test.slice/starved\n",
			"/proc/self/mountinfo":                      v2mounts,
			"/sys/fs/cgroup/test.slice/starved/cpu.max": "20000 100000\n",
			"/sys/fs/cgroup/test.slice/cpu.max":         "max 100000\n",
		}, 0.2},
		{"v2 parent tighter", map[string]string{
			"/proc/self/cgroup":          "0::/a/b\n",
			"/proc/self/mountinfo":       v2mounts,
			"/sys/fs/cgroup/a/b/cpu.max": "150000 100000\n",
			"/sys/fs/cgroup/a/cpu.max":   "50000 100000\n",
		}, 0.5},
		{"v2 none", map[string]string{
			"/proc/self/cgroup":        "0::/a\n",
			"/proc/self/mountinfo":     v2mounts,
			"/sys/fs/cgroup/a/cpu.max": "max 100000\n",
		}, 0},
		{"v1", map[string]string{
			"/proc/self/cgroup":                              "4:memory:/x\n3:cpu,cpuacct:/x\n0::/\n",
			"/proc/self/mountinfo":                           v1mounts,
			"/sys/fs/cgroup/cpu,cpuacct/x/cpu.cfs_quota_us":  "20000\n",
			"/sys/fs/cgroup/cpu,cpuacct/x/cpu.cfs_period_us": "100000\n",
			"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":    "-1\n",
			"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us":   "100000\n",
		}, 0.2},
		{"v1 none", map[string]string{
			"/proc/self/cgroup":                            "3:cpu,cpuacct:/\n0::/\n",
			"/proc/self/mountinfo":                         v1mounts,
			"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":  "-1\n",
			"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
		}, 0},
		{"unreadable", map[string]string{}, 0},
	} {
		read := func(name string) ([]byte, error) {
			if s, ok := c.files[name]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		}
		got, _, ok := cpuQuota(read)
		if ok != (c.want > 0) || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: quota %v, %v; want %v", c.name, got, ok, c.want)
		}
	}
}

// TestThrottling reads a quota's cgroup's throttling counters, the same
// in cgroup v1's cpu.stat and v2's, and names the cgroup whose quota is
// the tightest.
func TestThrottling(t *testing.T) {
	files := map[string]string{
		"/proc/self/cgroup":                   "0::/a/b\n",
		"/proc/self/mountinfo":                "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
		"/sys/fs/cgroup/a/b/cpu.max":          "max 100000\n",
		"/sys/fs/cgroup/a/cpu.max":            "10000 100000\n",
		"/sys/fs/cgroup/a/cpu.stat":           "usage_usec 5\nnr_periods 40\nnr_throttled 30\nthrottled_usec 9\n",
		"/sys/fs/cgroup/cpu,cpuacct/cpu.stat": "nr_periods 7\nnr_throttled 2\nthrottled_time 100\n",
	}
	read := func(name string) ([]byte, error) {
		if s, ok := files[name]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
	if q, dir, ok := cpuQuota(read); !ok || q != 0.1 || dir != "/sys/fs/cgroup/a" {
		t.Fatalf("quota %v in %q, %v; want 0.1 in /sys/fs/cgroup/a", q, dir, ok)
	}
	for dir, want := range map[string][2]int64{"/sys/fs/cgroup/a": {40, 30}, "/sys/fs/cgroup/cpu,cpuacct": {7, 2}} {
		if p, n, ok := readThrottling(read, dir); !ok || p != want[0] || n != want[1] {
			t.Errorf("%s: %d periods, %d throttled, %v; want %v", dir, p, n, ok, want)
		}
	}
	if _, _, ok := readThrottling(read, "/nowhere"); ok {
		t.Error("throttling read where there is no cpu.stat")
	}
	a := cpuClock{periods: 40, throttled: 30, cg: true}
	b := cpuClock{wall: a.wall.Add(time.Second), periods: 50, throttled: 38, cg: true}
	if u := cpuUse(a, b); u.Throttled != model.Some(0.8) {
		t.Errorf("throttled share %v over 10 periods with 8 throttled, want 0.8", u.Throttled)
	}
	if u := cpuUse(cpuClock{}, cpuClock{wall: time.Unix(1, 0)}); u.Throttled.OK {
		t.Errorf("throttled share %v without a quota, want absent", u.Throttled)
	}
}
