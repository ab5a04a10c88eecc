package engine

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// cpuClock is this process's CPU time and the wall clock at one moment,
// with its quota's enforcement periods and how many of them throttled it
// (cg: read from the cgroup holding its quota).
type cpuClock struct {
	wall               time.Time
	user, system       time.Duration
	periods, throttled int64
	cg                 bool
}

// readCPUClock reads the process's CPU time (getrusage, every thread),
// as iperf3's cpu_util does, and, given the directory of the cgroup
// whose quota holds it, that cgroup's throttling counters; ok is false
// when the kernel refuses.
func readCPUClock(quotaDir string) (c cpuClock, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuClock{}, false
	}
	c = cpuClock{wall: time.Now(), user: time.Duration(ru.Utime.Nano()), system: time.Duration(ru.Stime.Nano())}
	if quotaDir != "" {
		c.periods, c.throttled, c.cg = readThrottling(os.ReadFile, quotaDir)
	}
	return c, true
}

// cpuUse is the CPU time spent from a to b as a share of the wall-clock
// time between them, in percent of one CPU, and the share of the
// quota's periods that throttled the process; nil when nothing elapsed.
func cpuUse(a, b cpuClock) *model.CPUUse {
	wall := b.wall.Sub(a.wall)
	if wall <= 0 {
		return nil
	}
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(wall) }
	u, s := b.user-a.user, b.system-a.system
	use := &model.CPUUse{Total: pct(u + s), User: pct(u), System: pct(s)}
	if n := b.periods - a.periods; a.cg && b.cg && n > 0 {
		use.Throttled = model.Some(float64(b.throttled-a.throttled) / float64(n))
	}
	return use
}

// readThrottling reads nr_periods and nr_throttled from the cpu.stat of
// the cgroup at dir (both cgroup v1 and v2 name them so): the quota's
// enforcement periods in which the cgroup had work, and those that ended
// with it throttled.
func readThrottling(read func(string) ([]byte, error), dir string) (periods, throttled int64, ok bool) {
	b, err := read(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, 0, false
	}
	var havePeriods, haveThrottled bool
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "nr_periods":
			periods, havePeriods = n, true
		case "nr_throttled":
			throttled, haveThrottled = n, true
		}
	}
	return periods, throttled, havePeriods && haveThrottled
}

// cpuQuota is the CPU time this process's cgroups allow it, in cores:
// the tightest quota of its cgroup and their ancestors, in the cgroup v2
// hierarchy (cpu.max) and the v1 cpu controller's (cpu.cfs_quota_us over
// cpu.cfs_period_us), as the Go runtime reads them for GOMAXPROCS. ok is
// false when no quota holds the process or the files cannot be read.
// dir is the cgroup whose quota it is. read is os.ReadFile, or a
// fixture's in tests.
func cpuQuota(read func(string) ([]byte, error)) (cores float64, dir string, ok bool) {
	cg, err := read("/proc/self/cgroup")
	if err != nil {
		return 0, "", false
	}
	mi, err := read("/proc/self/mountinfo")
	if err != nil {
		return 0, "", false
	}
	// /proc/self/cgroup: "hierarchy-ID:controllers:path", hierarchy 0
	// with no controllers for v2.
	var v2, v1 string
	var have2, have1 bool
	for line := range strings.Lines(string(cg)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, have2 = parts[2], true
		case slices.Contains(strings.Split(parts[1], ","), "cpu"):
			v1, have1 = parts[2], true
		}
	}
	best, bestDir := math.Inf(1), ""
	for line := range strings.Lines(string(mi)) {
		// mountinfo: ID parent major:minor root mountpoint options
		// [optional...] - fstype source superoptions
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 5 || len(f) < sep+4 {
			continue
		}
		root, mnt, fstype, super := f[3], f[4], f[sep+1], f[sep+3]
		switch {
		case fstype == "cgroup2" && have2:
			for dir := range cgroupDirs(mnt, root, v2) {
				if q, ok := parseCPUMax(read(filepath.Join(dir, "cpu.max"))); ok && q < best {
					best, bestDir = q, dir
				}
			}
		case fstype == "cgroup" && have1 && slices.Contains(strings.Split(super, ","), "cpu"):
			for dir := range cgroupDirs(mnt, root, v1) {
				if q, ok := readCFSQuota(read, dir); ok && q < best {
					best, bestDir = q, dir
				}
			}
		}
	}
	if math.IsInf(best, 1) {
		return 0, "", false
	}
	return best, bestDir, true
}

// cgroupDirs yields the directory of cgroup path under a hierarchy
// mounted at mnt (whose root is root), then each ancestor up to mnt: a
// parent's quota holds its children too.
func cgroupDirs(mnt, root, path string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		rel, ok := strings.CutPrefix(path, root)
		if !ok {
			rel = "" // another cgroup namespace's view: only the mount's own
		}
		dir := filepath.Join(mnt, rel)
		for {
			if !yield(dir) || dir == mnt || !strings.HasPrefix(dir, mnt) {
				return
			}
			dir = filepath.Dir(dir)
		}
	}
}

// parseCPUMax reads cgroup v2's cpu.max, "QUOTA PERIOD" in µs or "max
// PERIOD" for none.
func parseCPUMax(b []byte, err error) (float64, bool) {
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[0] == "max" {
		return 0, false
	}
	q, err1 := strconv.ParseFloat(f[0], 64)
	p, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return q / p, true
}

// readCFSQuota reads cgroup v1's cpu.cfs_quota_us (-1 for none) over
// cpu.cfs_period_us in dir.
func readCFSQuota(read func(string) ([]byte, error), dir string) (float64, bool) {
	qb, err := read(filepath.Join(dir, "cpu.cfs_quota_us"))
	if err != nil {
		return 0, false
	}
	pb, err := read(filepath.Join(dir, "cpu.cfs_period_us"))
	if err != nil {
		return 0, false
	}
	q, err1 := strconv.ParseFloat(strings.TrimSpace(string(qb)), 64)
	p, err2 := strconv.ParseFloat(strings.TrimSpace(string(pb)), 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return q / p, true
}

// cpuHost is what the end's process may use of its machine's CPUs: how
// many it may run on, and its cgroups' quota when one holds it, with the
// directory of the cgroup whose quota it is (for its throttling).
func cpuHost() (cpus model.Opt[int], quota model.Opt[float64], quotaDir string) {
	cpus = model.Some(runtime.NumCPU())
	if q, dir, ok := cpuQuota(os.ReadFile); ok {
		quota, quotaDir = model.Some(q), dir
	}
	return cpus, quota, quotaDir
}
