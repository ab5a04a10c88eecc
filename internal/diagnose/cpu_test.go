package diagnose

import (
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// withCPU gives every interval of e a CPU use of pct percent of one core
// and says the end may run on cpus CPUs.
func withCPU(e *model.EndReport, pct float64, cpus int) {
	for i := range e.Intervals {
		e.Intervals[i].CPU = &model.CPUUse{Total: pct, User: pct / 10, System: pct * 9 / 10}
	}
	e.CPUs = model.Some(cpus)
}

// cpuFindings is the run's cpu-bound findings.
func cpuFindings(run *model.Run) []model.Finding {
	var out []model.Finding
	for _, f := range Test(run, Options{}) {
		if f.ID == "cpu-bound" {
			out = append(out, f)
		}
	}
	return out
}

// TestCPUBound holds the CPU rule on recorded lab runs given CPU figures:
// it names the end that used all the CPU it may when that end's kernel
// agrees, and stays silent (saying nothing of CPU) when the CPU is not
// reported, when the network or a window sets the rate, when -b does,
// and over loopback when both ends were busy.
func TestCPUBound(t *testing.T) {
	for _, c := range []struct {
		name  string
		base  string
		setup func(*model.Run)
		// want: "" for no cpu-bound finding, or the role and end it names.
		want  model.Role
		side  model.Side
		check func(*testing.T, model.Finding)
	}{
		{name: "receiver at a core, reading slowly", base: "slow-reader", setup: func(r *model.Run) {
			r.Config.ReadRate = 0 // the same kernel account, from a reader held by its CPU
			withCPU(&r.Remote, 97, 4)
			withCPU(&r.Client, 12, 4)
		}, want: model.Receiver, side: model.ServerSide, check: func(t *testing.T, f model.Finding) {
			if !strings.Contains(fixText(f), "-P 2") || !f.Predicted.OK {
				t.Errorf("fixes %q, predicted %v: want -P 2 with a predicted rate", fixText(f), f.Predicted)
			}
		}},
		{name: "sender at a core, application-limited", base: "sender-app-limited", setup: func(r *model.Run) {
			// Idle most of the time, not by -b's choice: the kernel's
			// chrono as a CPU-starved loopback sender showed it.
			r.Config.Bitrate = 0
			for i := range r.Client.Totals {
				r.Client.Totals[i].Limited = model.Some(model.Limited{Rwnd: 0.1, Cwnd: 0.25, App: 0.65})
			}
			withCPU(&r.Client, 99, 2)
			withCPU(&r.Remote, 10, 2)
		}, want: model.Sender, side: model.ClientSide, check: func(t *testing.T, f model.Finding) {
			if !strings.Contains(fixText(f), "-Z") || !strings.Contains(fixText(f), "-P 2") {
				t.Errorf("fixes %q: want -Z and -P 2", fixText(f))
			}
		}},
		{name: "the same sender over loopback", base: "sender-app-limited", setup: func(r *model.Run) {
			r.Config.Bitrate = 0
			for i := range r.Client.Totals {
				r.Client.Totals[i].Limited = model.Some(model.Limited{Rwnd: 0.1, Cwnd: 0.25, App: 0.65})
			}
			for i := range r.Streams {
				r.Streams[i].ClientAddr, r.Streams[i].ServerAddr = "127.0.0.1:40000", "127.0.0.1:5201"
			}
			withCPU(&r.Client, 99, 2)
			withCPU(&r.Remote, 10, 2)
		}, want: model.Sender, side: model.ClientSide, check: func(t *testing.T, f model.Finding) {
			// Over loopback the kernel copies sendfile's pages anyway.
			if strings.Contains(fixText(f), "-Z") {
				t.Errorf("fixes %q: -Z over loopback", fixText(f))
			}
		}},
		{name: "receiver throttled by its cgroup's quota", base: "slow-reader", setup: func(r *model.Run) {
			r.Config.ReadRate = 0
			withCPU(&r.Remote, 6, 2)
			r.Remote.CPUQuota = model.Some(0.1)
			for i := range r.Remote.Intervals {
				r.Remote.Intervals[i].CPU.Throttled = model.Some(0.9)
			}
		}, want: model.Receiver, side: model.ServerSide, check: func(t *testing.T, f model.Finding) {
			if !strings.Contains(f.Summary, "throttled it in 90%") || !strings.Contains(fixText(f), "cgroup allows 0.10 cores") {
				t.Errorf("summary %q, fixes %q: want the quota and its throttling", f.Summary, fixText(f))
			}
		}},
		{name: "a stock iperf3 peer's whole-test CPU", base: "slow-reader", setup: func(r *model.Run) {
			r.Config.ReadRate = 0
			r.Remote.CPU = &model.CPUUse{Total: 95, User: 5, System: 90}
		}, want: model.Receiver, side: model.ServerSide, check: func(t *testing.T, f model.Finding) {
			if f.Confidence != model.Medium || !strings.Contains(f.Evidence[1].Value, "over its whole test") {
				t.Errorf("confidence %s, evidence %q: want medium, from the whole test", f.Confidence, f.Evidence[1].Value)
			}
		}},
		{name: "no CPU reported", base: "slow-reader", setup: func(r *model.Run) {
			r.Config.ReadRate = 0
			withCPU(&r.Client, 99, 1) // the sender's, which cannot show a slow reader
		}},
		{name: "receiver's CPU reported, but not busy", base: "slow-reader", setup: func(r *model.Run) {
			withCPU(&r.Remote, 30, 4)
		}},
		{name: "loss sets the rate, however busy the ends", base: "loss-limited", setup: func(r *model.Run) {
			withCPU(&r.Client, 99, 1)
			withCPU(&r.Remote, 99, 1)
		}},
		{name: "the window sets the rate, nothing unread", base: "rwnd-limited", setup: func(r *model.Run) {
			withCPU(&r.Client, 99, 1)
			withCPU(&r.Remote, 99, 1)
		}},
		{name: "-b sets the rate", base: "sender-app-limited", setup: func(r *model.Run) {
			withCPU(&r.Client, 99, 1)
		}},
		{name: "loopback with both ends busy", base: "bottleneck.loopback", setup: func(r *model.Run) {
			withCPU(&r.Client, 95, 2)
			withCPU(&r.Remote, 90, 2)
		}},
		{name: "loopback: a sender at a core beside a receiver with CPU to spare", base: "bottleneck.loopback", setup: func(r *model.Run) {
			// An unpaced loopback stream on an idle host: its sender does
			// the receiver's kernel work too (95% and 58% of a core, 40
			// Gbit/s): the host's CPUs set the rate, no end is short.
			withCPU(&r.Client, 95, 2)
			withCPU(&r.Remote, 58, 2)
		}},
		{name: "loopback: a sender its quota throttled, beside a receiver with CPU to spare", base: "bottleneck.loopback", setup: func(r *model.Run) {
			withCPU(&r.Client, 10, 2)
			r.Client.CPUQuota = model.Some(0.1)
			for i := range r.Client.Intervals {
				r.Client.Intervals[i].CPU.Throttled = model.Some(1.0)
			}
			withCPU(&r.Remote, 8, 2)
		}, want: model.Sender, side: model.ClientSide},
		{name: "a sender busy on all its cores, held by its congestion window", base: "bottleneck", setup: func(r *model.Run) {
			withCPU(&r.Client, 99, 1)
			withCPU(&r.Remote, 5, 1)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := load(t, c.base)
			c.setup(run)
			fs := cpuFindings(run)
			if c.want == "" {
				if len(fs) > 0 {
					t.Fatalf("cpu-bound fired: %s", fs[0].Summary)
				}
				for _, f := range Test(run, Options{}) {
					for _, e := range f.Evidence {
						if strings.Contains(e.What, "CPU use") {
							t.Fatalf("%s cites %q without the rule firing", f.ID, e.What)
						}
					}
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("%d cpu-bound findings, want 1: %v", len(fs), primaries(Test(run, Options{})))
			}
			f := fs[0]
			all := Test(run, Options{})
			if all[0].ID != "cpu-bound" || !f.Primary {
				t.Fatalf("verdict %v: want cpu-bound first and primary", primaries(all))
			}
			if !strings.HasPrefix(f.Summary, "The "+string(c.want)+"'s CPU is the bottleneck") || f.Evidence[1].Source != string(c.side) {
				t.Fatalf("summary %q, evidence from %q: want the %s (%s)", f.Summary, f.Evidence[1].Source, c.want, c.side)
			}
			if c.check != nil {
				c.check(t, f)
			}
		})
	}
}

func fixText(f model.Finding) string {
	var out []string
	for _, x := range f.Fix {
		out = append(out, x.Command)
	}
	return strings.Join(out, "; ")
}
