package diagnose

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/golden"

	"github.com/tcpscope/tcpscope/internal/model"
)

// TestRecorded diagnoses runs recorded in the lab and on loopback
// (testdata/ID.json by internal/lab/experiment's TestScenarios -record,
// testdata/ID.VARIANT.json by its TestServedIperf3 -record or saved from
// tcpscope test --json; ID.iperf3-*.json are what iperf3.ReadJSON made of
// stock iperf3 -J documents, internal/iperf3/testdata/stock) and
// compares the findings with the .golden.json beside each; -update
// rewrites them. Each recording is named after the finding it must
// produce.
func TestRecorded(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		// ID.json, or ID.VARIANT.json for more recordings of one finding.
		want, _, _ := strings.Cut(name, ".")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var run model.Run
			if err := json.Unmarshal(b, &run); err != nil {
				t.Fatal(err)
			}
			got := Test(&run, Options{})
			if !slices.ContainsFunc(got, func(f model.Finding) bool { return f.ID == want }) {
				t.Errorf("findings %v, want %s among them", ids(got), want)
			}
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, strings.TrimSuffix(f, ".json")+".golden.json", append(out, '\n'))
		})
	}
	if n == 0 {
		t.Fatal("no recorded runs in testdata")
	}
}

func TestTargetSizesTheFix(t *testing.T) {
	b, err := os.ReadFile("testdata/wscale-off.json")
	if err != nil {
		t.Fatal(err)
	}
	var run model.Run
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	f := Test(&run, Options{Target: 100 * model.MbitPerSecond})[0]
	if p, ok := f.Predicted.Get(); !ok || p != 100*model.MbitPerSecond {
		t.Errorf("with a 100 Mbit/s target the prediction is %v", f.Predicted)
	}
	// Without window scaling the fix is the sysctl, whatever the target.
	if len(f.Fix) == 0 || !strings.Contains(f.Fix[0].Command, "tcp_window_scaling=1") {
		t.Errorf("fix %+v", f.Fix)
	}
}

// load reads a recorded run from testdata.
func load(t *testing.T, name string) *model.Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var run model.Run
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	return &run
}

// primaries lists a diagnosis's primary findings, in order.
func primaries(fs []model.Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Primary {
			out = append(out, f.ID)
		}
	}
	return out
}

// TestVerdict holds the one-verdict rule over every recording: in each
// direction the first finding is primary, and when anything of warning
// or critical severity stands beside the limit, the verdict names it in
// its summary, is at least as severe, and does not call the transfer
// healthy. (Before the rule, a 2 s queue on an 8 Mbit/s link was headed
// by an info "bottleneck ... how a healthy transfer looks" with the
// bufferbloat a footnote; so were 1% reordering and a 536-byte MSS.)
func TestVerdict(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			fs := Test(load(t, name), Options{})
			for _, dir := range []model.Direction{model.ClientToServer, model.ServerToClient} {
				var head *model.Finding
				for i := range fs {
					f := &fs[i]
					if f.Direction != dir {
						continue
					}
					if head == nil {
						if !f.Primary {
							t.Fatalf("%s: the first finding, %s, is not primary", dir, f.ID)
						}
						head = f
						continue
					}
					if f.Primary || f.Severity == model.Info {
						continue
					}
					if !strings.Contains(head.Summary, "("+f.ID+")") {
						t.Errorf("%s: %s [%s] stands, and the verdict does not name it: %s", dir, f.ID, f.Severity, head.Summary)
					}
					if head.Severity.Rank() > f.Severity.Rank() {
						t.Errorf("%s: verdict %s is %s beside %s [%s]", dir, head.ID, head.Severity, f.ID, f.Severity)
					}
					if strings.Contains(head.Explanation, "healthy") {
						t.Errorf("%s: verdict calls the transfer healthy beside %s: %s", dir, f.ID, head.Explanation)
					}
				}
			}
		})
	}
}

// TestLimits: the primary findings of recorded runs that were diagnosed
// wrongly, and findings that must not appear there.
func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		want  []string // the primary findings, in order
		not   []string
		why   string
		named []string // findings the verdict must name
	}{
		{"bufferbloat.8m-2s-queue", []string{"bottleneck"}, nil,
			"an 8 Mbit/s link with a 2 s queue: the round trip 17 times its minimum was a footnote to an info bottleneck", []string{"bufferbloat"}},
		{"reordering.1pct", []string{"bottleneck"}, nil, "1% reordering at the bottleneck's rate, absorbed: a property of the path beside a healthy verdict", nil},
		{"small-mss.536", []string{"bottleneck"}, nil, "a 536-byte MSS clamp at the bottleneck's rate", []string{"small-mss"}},
		{"bottleneck.loopback", []string{"bottleneck"}, []string{"sender-app-limited", "reordering", "slow-reader"},
			"loopback at 21 Gbit/s, 89% cwnd-limited: the sample taken after the writer stopped read as an idle application; reordering and drops of the host's own blamed on a path", nil},
		{"bottleneck.loopback-reader", []string{"bottleneck"}, []string{"slow-reader", "reordering"},
			"loopback: bytes wait in the reader's queue though the sender never waited on the window (4%)", nil},
		{"sender-unknown.iperf3-reverse", []string{"sender-unknown"}, []string{"bottleneck", "sack-off", "timestamps-off"},
			"a stock iperf3 server sent: its kernel was not read, and nothing may say the hosts did not hold it back", nil},
		{"sender-unknown.served-iperf3", []string{"sender-unknown"}, []string{"slow-reader", "bottleneck"},
			"tcpscope server receiving from a stock iperf3 client: its absent windows read as 0 B made a slow reader", nil},
		{"sender-app-limited.served-iperf3-b", []string{"sender-app-limited"}, []string{"bottleneck"},
			"a stock iperf3 client with -b 200M is limited by its own rate, not a bottleneck", nil},
		{"sndbuf-limited.full-buffer", []string{"sndbuf-limited"}, []string{"sender-app-limited"},
			"128 KiB send buffer on a 50 ms path: every sample full, the kernel's sndbuf chrono at 1%", nil},
		{"rwnd-limited.colimit-1", []string{"rwnd-limited", "loss-limited"}, nil,
			"0.05% loss and a 200 KiB window at 60 ms, a run where loss kept the sender below the window", nil},
		{"rwnd-limited.colimit-2", []string{"rwnd-limited", "loss-limited"}, nil,
			"the same path, a run where the window held the sender 99% of the time", nil},
		{"pmtu-blackhole.jumbo-download", []string{"pmtu-blackhole"}, []string{"bottleneck", "small-mss"},
			"the server sent into a black hole and its report never came: the receiver's 0 B and 536-byte rcv_mss read as a 0 bit/s bottleneck", nil},
		{"bottleneck.window-over-bdp", []string{"bottleneck"}, []string{"rwnd-limited"},
			"tuned hosts on 1 Gbit/s, 21 ms: reno waited on a window larger than the path's BDP, with a queue standing", nil},
		{"bottleneck.slow-start-overshoot", []string{"bottleneck"}, []string{"policer", "loss-limited"},
			"reno on 100 Mbit/s, 150 ms: slow start's overshoot lost 1.9% in the first intervals, then none; at the path's rate, so the loss is named (1.9% is heavy) but the headline stays", []string{"lossy-path"}},
		{"still-growing.cubic-toward-policer", []string{"still-growing"}, []string{"bottleneck"},
			"cubic regrowing toward a 272 Mbit/s policer at 111 Mbit/s with no loss in 4 s: its bursts queued 1.2 ms at the 692 Mbit/s link, read as the path full (r4000#113)", nil},
		{"loss-limited.slow-start-into-short-queue", []string{"loss-limited"}, []string{"policer", "bottleneck"},
			"reno's slow start on a 651 Mbit/s, 153.6 ms path into a 0.3 BDP queue: the smoothed RTT rose 30 ms (956 kB at the 255 Mbit/s delivered), then 3.7% lost, 43% of the path; under a quarter of the RTT, it was read as a policer's drops without a queue (r9000#1768)", nil},
		{"loss-limited.floored-min-rtt", []string{"loss-limited"}, []string{"bottleneck"},
			"reno at its Mathis bound, 0.09% loss on a 625 Mbit/s, 4.8 ms path: the kernel's min_rtt floored to 4 ms by a timestamp sample made 1.4 ms of queue out of nothing, and the path's bottleneck was named at 17% of the path (r10000#34)", nil},
		{"bottleneck.eight-streams-three-timeouts", []string{"bottleneck"}, []string{"rto-stalls"},
			"eight cubic streams on a 10.3 Mbit/s, 128 ms path with a 0.25 BDP queue: 3 timeouts among them, 4% of their time, at 97% of the path, warned of as the sender stalling (r10000#50, kernel)", nil},
		{"bottleneck.reno-spill-one-episode", []string{"bottleneck"}, []string{"loss-limited"},
			"reno on a 36.3 Mbit/s, 55.6 ms path: slow start's recovery retransmitted 2 segments in the first measured interval, none after, regrowing at 93% of the path; called loss-limited at 1.5× the Mathis bound of those 2 (r11000#410)", nil},
		{"bottleneck.cubic-plateau-into-queue", []string{"bottleneck"}, []string{"still-growing"},
			"cubic regrowing to the window it lost at on a 43.7 Mbit/s, 66.5 ms path, no loss in 4 s: the rate flat for the last three intervals while the round trip rose 3.1 ms, 95% of the path, called still-growing (r9000#1091, kernel)", nil},
		{"still-growing.reno-under-bdp", []string{"still-growing"}, []string{"bottleneck"},
			"reno halved under the BDP of a 93.9 Mbit/s, 106 ms path with a 0.27 BDP queue: 60.3 Mbit/s and regrowing, no loss, called the path's bottleneck (r3000#102)", nil},
		{"loss-limited.policer-behind-queue", []string{"loss-limited"}, []string{"bottleneck"},
			"an nftables policer at 3.13 Mbit/s behind a 32.3 Mbit/s tbf: 15% lost, 3.05 Mbit/s; slow start's 2.7 ms in the tbf (0.9 segments at the rate delivered) was read as the queue that dropped, and the headline said the loss cost nothing (r4000#41, kernel)", nil},
		{"bottleneck.slow-start-spill", []string{"bottleneck"}, []string{"policer", "lossy-path"},
			"reno at 133.5 ms on a clean path: slow start's recovery spilled 133 retransmissions past the omit mark, no measured interval lost one, and the light-loss policer read it at the ceiling (r7000#71)", nil},
		{"bottleneck.reno-one-loss-each", []string{"bottleneck"}, []string{"loss-limited"},
			"two reno streams at 73.5 ms on a 0.37 BDP queue that lost one segment each in 4 s: no sawtooth, so no Mathis bound (r3000#562)", nil},
		{"rto-stalls.eight-small-windows", []string{"bottleneck"}, nil,
			"eight cubic streams on an 82.7 Mbit/s, 11.4 ms path and a 0.52 BDP queue: windows of a few segments, a quarter of a stream's life in timeouts at 0.76% lost (r3000#567)", []string{"rto-stalls"}},
		{"bottleneck.reno-queue", []string{"bottleneck"}, []string{"loss-limited"},
			"reno at the 100 Mbit/s link rate building a queue, 2 losses in 4 s", nil},
		{"bottleneck.loopback-reno", []string{"bottleneck"}, []string{"rwnd-limited"},
			"loopback: reno's congestion window outgrows the receive window, 17% window-limited", nil},
		{"bottleneck.loopback-reno-sndbuf", []string{"bottleneck"}, []string{"sndbuf-limited"},
			"loopback: the send buffer holds the reader's backlog", nil},
		{"bottleneck.loopback-cubic", []string{"bottleneck"}, []string{"slow-reader"},
			"loopback: 3.5 MiB unread with the sender window-limited 19% of the time", nil},
		{"policer.outrun", []string{"policer"}, []string{"bottleneck", "lossy-path"},
			"cubic through a 50 Mbit/s policer at 40 ms: slow start lost 5–12%, the window then regrew without loss at the minimum round trip, and the verdict was a 45 Mbit/s bottleneck", nil},
		{"sndbuf-limited.overrun", []string{"sndbuf-limited"}, []string{"bottleneck"},
			"64 KiB send buffer under cubic at 100 Mbit/s, 20 ms: the send queue past the buffer in bursts, the kernel's counters 100% cwnd-limited, 52 Mbit/s called the path's bottleneck", nil},
		{"server-rate-cap.up", []string{"server-rate-cap"}, []string{"zero-window", "rwnd-limited", "slow-reader", "bottleneck"},
			"a server holding -P 2 to 200 Mbit/s by reading no faster: its closed window is its policy, not a slow application", nil},
		{"server-rate-cap.down", []string{"server-rate-cap"}, []string{"pacing-limited", "bottleneck"},
			"a server pacing -R -P 2 at 100 Mbit/s a stream: its SO_MAX_PACING_RATE is the server's policy, not the application's to raise", nil},
		{"server-rate-cap.bidir", []string{"server-rate-cap", "server-rate-cap"}, []string{"zero-window", "pacing-limited", "bottleneck"},
			"--bidir -P 2 under a 200 Mbit/s cap: each direction held to its streams' half", nil},
		{"policer.nft-300m-40ms", []string{"policer"}, []string{"bottleneck", "lossy-path", "loss-limited"},
			"cubic through an nftables policer at 50 Mbit/s (a 10,000-byte bucket) behind a 300 Mbit/s, 40 ms path: 1.2% retransmitted at 14× the Mathis bound, and slow start's burst queued 2.9 ms at the 300 Mbit/s link, which the fitted rule read as a queue: an info bottleneck, alone", nil},
		{"sndbuf-limited.regrowing-window", []string{"sndbuf-limited"}, []string{"bottleneck"},
			"a 914 KiB send buffer at 95.7 Mbit/s, 122 ms under reno regrowing after a loss: 400 kB in flight against a 780 kB window, nothing unsent, in every sample, and a loss episode's 6% read as the limit", nil},
		{"sndbuf-limited.long-path", []string{"sndbuf-limited"}, []string{"loss-limited"},
			"a 7.7 MiB send buffer at 421 Mbit/s, 192 ms: in flight a third of the window, nothing unsent, with 52 ms standing in the emulator's queue, called the bottleneck", nil},
		{"rto-stalls.stopped-download", []string{"rto-stalls"}, []string{"sender-unknown", "bottleneck"},
			"-R through bursts of loss: 227, 221, 164 and 110 Mbit/s arrived, then nothing for 11 s and the server's report never came; sender-unknown, \"the receiver kept up\"", nil},
		{"bottleneck.eight-reno-streams", []string{"bottleneck"}, []string{"loss-limited"},
			"eight reno streams filling a 611 Mbit/s link's 0.43 BDP queue, 8.8 ms away: 87 segments standing for 1.9 ms, under the 2 ms threshold, at 0.92 of the streams' summed delivery peak: read as random loss", nil},
		{"sndbuf-limited.kernel-overrun", []string{"sndbuf-limited"}, []string{"bottleneck"},
			"a 339 KiB send buffer at 17.5 Mbit/s, 160 ms through the kernel's tbf: its bursts past the buffer overflowed the queue (16% lost), and the buffer compared whole with the 342 kB BDP read as holding enough", nil},
		{"policer.large-bucket", []string{"policer"}, []string{"bottleneck"},
			"cubic through a 265 Mbit/s policer with a 1.16 MB bucket behind an 852 Mbit/s link: 0.1% lost (under the 1% the rule asked) at 5 x the Mathis bound and 92% of the delivery peak, no queue: a bottleneck with a lossy-path warning", nil},
		{"bottleneck.reno-short-queue", []string{"bottleneck"}, []string{"loss-limited"},
			"four reno streams at 107 Mbit/s, 10.8 ms through a 0.42 BDP queue: 5.8 segments standing for 0.7 ms at 0.98 of their delivery peak, their own queue's overflow read as random loss", nil},
		{"bottleneck.reno-lan", []string{"bottleneck"}, []string{"loss-limited"},
			"reno at 447 Mbit/s, 1.9 ms through a one-BDP queue: 20 segments standing at 0.89 of its delivery peak, read as random loss", nil},
		{"pacing-limited.kernel-fq", []string{"pacing-limited"}, []string{"sndbuf-limited"},
			"-R --fq-rate 3.21 Mbit/s on an 11.7 Mbit/s path: the send queue full behind the pace, read as a full send buffer", nil},
		{"still-growing.reno-137ms", []string{"still-growing"}, []string{"bottleneck"},
			"reno at 137 ms after a loss in slow start: 2 to 4 Mbit/s over the measured 4 s on a 28 Mbit/s path, no loss and no queue, called the bottleneck, healthy", nil},
		{"bottleneck.shallow-queue", []string{"bottleneck"}, []string{"loss-limited"},
			"cubic at the rate of a 162 Mbit/s link 6 ms away whose queue is 2 ms: its own queue's overflow (0.05%) read as random loss", nil},
		{"rwnd-limited.fast-window", []string{"rwnd-limited"}, []string{"bottleneck"},
			"a 1.2 MiB window at 155 Mbit/s on a 949 Mbit/s, 63 ms path: 0.3 ms of the hosts' scheduling at the window's rate read as a queue at the path's", nil},
		{"bottleneck.bbr-4-streams", []string{"bottleneck"}, []string{"loss-limited"},
			"four bbr streams overflowing a 0.8 BDP queue (15% lost): each stream's delivery peak is the whole path's, and set against a quarter of the goodput the loss read as holding the rate; their timeouts summed over the streams read as 85% of the life", []string{"lossy-path"}},
		{"pmtu-blackhole.nothing-arrived", []string{"pmtu-blackhole"}, []string{"sender-unknown", "bottleneck"},
			"-R through bursts of loss counted in packets (a stalled sender sends few, so the burst never ended): 0 B arrived in 15 s, the server's report never came, and the verdict was sender-unknown, \"the receiver kept up\"", nil},
		{"policer.cubic", []string{"policer"}, []string{"lossy-path", "loss-limited"},
			"cubic through a 10 Mbit/s policer: 11.9% retransmitted with the round trip at its minimum", nil},
		{"bottleneck.bbr-two-streams-short-path", []string{"bottleneck"}, []string{"loss-limited"},
			"two bbr streams on a 60.8 Mbit/s, 1.3 ms path with 2.4 BDP of queue: 58.7 Mbit/s and 15% retransmitted, 3.4 ms of queue standing; the kernel sampled delivery at 80.9, and against it the loss read as holding the rate (r9000#373, kernel)", []string{"lossy-path"}},
		{"rwnd-limited.reno-regrowing-to-window", []string{"rwnd-limited", "loss-limited"}, []string{"bottleneck"},
			"reno with a 628 KiB receive buffer on a 216 Mbit/s, 26.6 ms path, one loss in 4 s: 24% window-limited at 0.81 of what the window carries, regrowing to it, called the path's bottleneck at 45% of the path (r8000#2)", nil},
		{"bottleneck.reno-shallow-overflow", []string{"bottleneck"}, []string{"lossy-path"},
			"reno on a 516 Mbit/s, 5.3 ms path with a 0.38 BDP queue: 58% of the path and 0.19% retransmitted at 4.5x the Mathis bound, 1.3 ms of queue standing: its queue overflowing once a sawtooth, warned of as random loss on the path (r9000#613)", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := Test(load(t, tc.name), Options{})
			if got := primaries(fs); !slices.Equal(got, tc.want) {
				t.Errorf("primary %v, want %v (%s)", got, tc.want, tc.why)
			}
			for _, f := range fs {
				if slices.Contains(tc.not, f.ID) {
					t.Errorf("%s: %s (%s)", f.ID, f.Summary, tc.why)
				}
			}
			for _, id := range tc.named {
				if !strings.Contains(fs[0].Summary, "("+id+")") || fs[0].Severity == model.Info {
					t.Errorf("verdict [%s] does not name %s: %s (%s)", fs[0].Severity, id, fs[0].Summary, tc.why)
				}
			}
		})
	}
}

// TestOverrunNeedsBuffer: a send queue past the buffer is read only
// where the buffer's size was sampled. The same run with the size absent
// (a recording from before it was read, or a kernel that gave none) has
// no evidence of the buffer, and nothing reads the absent size as 0 B.
func TestOverrunNeedsBuffer(t *testing.T) {
	run := load(t, "sndbuf-limited.overrun")
	if fs := Test(run, Options{}); fs[0].ID != "sndbuf-limited" || !strings.Contains(fs[0].Summary, "past the buffer") {
		t.Fatalf("with the buffer sampled: %s: %s", fs[0].ID, fs[0].Summary)
	}
	for i := range run.Client.Intervals {
		for j := range run.Client.Intervals[i].Streams {
			run.Client.Intervals[i].Streams[j].TCP.SndBuf = model.Opt[model.Bytes]{}
		}
	}
	for _, f := range Test(run, Options{}) {
		if strings.Contains(f.Summary, "past the buffer") {
			t.Errorf("%s from a buffer size never sampled: %s", f.ID, f.Summary)
		}
	}
}

// A sender paced by -b is told to test without -b, not to write larger
// blocks than the 1 MiB it writes.
func TestRateLimitAdvice(t *testing.T) {
	run := load(t, "sender-app-limited")
	fs := Test(run, Options{})
	if fs[0].ID != "sender-app-limited" || !strings.Contains(fs[0].Summary, "-b") {
		t.Fatalf("verdict %s: %s", fs[0].ID, fs[0].Summary)
	}
	for _, x := range fs[0].Fix {
		if strings.Contains(x.Command, "-l 1M") || !strings.Contains(x.Command, "without -b") {
			t.Errorf("fix %q for a sender held by -b that writes %s", x.Command, run.Config.Length.Binary())
		}
	}
}

// TestBlackHoleFromAcks: jumbo-MTU hosts behind a 1500-byte hop that drops
// silently. Nothing but the first bytes arrived, the sender spent the
// test in timeouts and the server's report never came; what arrived is
// what the sender's kernel saw acknowledged (bytes_acked less the SYN's
// one), never the bytes it wrote (which made the summary 265 kbit/s, and
// the verdict rwnd-limited). Without bytes_acked either, what arrived is
// not known, and nothing reads it as zero.
func TestBlackHoleFromAcks(t *testing.T) {
	run := load(t, "pmtu-blackhole.jumbo")
	run.Summary = model.Summarize(run) // from the ends' reports, as the client does
	s := run.Summary[0]
	if b, ok := s.ReceiverBytes.Get(); !ok || !s.FromAcks || b >= model.KiB || s.SenderBytes.V <= b {
		t.Fatalf("summary: received %v (from acks %v), written %v", s.ReceiverBytes, s.FromAcks, s.SenderBytes)
	}
	fs := Test(run, Options{})
	if fs[0].ID != "pmtu-blackhole" || !strings.Contains(fs[0].Evidence[0].What, "acknowledged") {
		t.Errorf("verdict %s, evidence %+v", fs[0].ID, fs[0].Evidence)
	}
	for i := range run.Client.Totals {
		if f := run.Client.Totals[i].Final; f != nil {
			f.BytesAcked = model.Opt[model.Bytes]{}
		}
	}
	run.Summary = model.Summarize(run)
	if run.Summary[0].Goodput.OK {
		t.Fatalf("goodput %v without any report of what arrived", run.Summary[0].Goodput)
	}
	fs = Test(run, Options{})
	if fs[0].ID != "pmtu-blackhole" || !strings.Contains(fs[0].Summary, "not known") {
		t.Errorf("verdict %s: %s", fs[0].ID, fs[0].Summary)
	}
	for _, f := range fs {
		if strings.Contains(f.Summary, "0 bit/s") || strings.Contains(f.Summary, "no data arrived") {
			t.Errorf("%s reads an unknown as zero: %s", f.ID, f.Summary)
		}
	}
}

// TestNoKernelNotHealthy: a run neither of whose kernels was read (what
// an iperf3 -J document holds: bytes, times, the sender's
// retransmissions) is not-judged, never the bottleneck's "healthy" nor
// any rule reading absent counters as zeros. The recorded runs of every
// cause, stripped to that, all say so.
func TestNoKernelNotHealthy(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		run := load(t, name)
		if run.Config.IsUDP() || run.Config.Bitrate > 0 || run.ServerRateCap > 0 || nothingArrived(run) {
			continue // judged from bytes alone: -b, a server's cap, no byte at all; UDP's own rules
		}
		n++
		for _, e := range []*model.EndReport{&run.Client, &run.Remote} {
			e.NoKernelState, e.Intervals = true, nil
			for i := range e.Totals {
				tot := &e.Totals[i]
				tot.Final, tot.Limited, tot.SentBytes, tot.RetransBytes = nil, model.Opt[model.Limited]{}, model.Opt[model.Bytes]{}, model.Opt[model.Bytes]{}
			}
		}
		for i := range run.Streams {
			run.Streams[i].Client, run.Streams[i].Server = nil, nil
		}
		run.Summary = model.Summarize(run)
		for _, f := range Test(run, Options{}) {
			if f.Primary && f.ID != "not-judged" || strings.Contains(f.Summary, "healthy") {
				t.Errorf("%s without kernels: %s (%s): %s", name, f.ID, f.Severity, f.Summary)
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d recorded runs stripped", n)
	}
}

// nothingArrived reports a run in which some direction's receiver got
// no byte: bytes alone say the transfer moved nothing.
func nothingArrived(run *model.Run) bool {
	for _, d := range run.Summary {
		if b, ok := d.ReceiverBytes.Get(); ok && b == 0 {
			return true
		}
	}
	return false
}

// TestOldIperf3Result: a result saved before no_kernel_state existed
// carries a zeroed final sample for a stock iperf3 peer (here the server
// that sent, -R). Zeros are not the peer's kernel: no sack-off or
// timestamps-off (both ends negotiated them), no bottleneck claiming the
// hosts did not hold the sender back.
func TestOldIperf3Result(t *testing.T) {
	run := load(t, "sender-unknown.iperf3-reverse")
	run.Remote.NoKernelState = false
	for i := range run.Remote.Totals {
		run.Remote.Totals[i].Final = &model.Sample{}
	}
	fs := Test(run, Options{})
	if fs[0].ID != "sender-unknown" {
		t.Errorf("verdict %s: %s", fs[0].ID, fs[0].Summary)
	}
	for _, f := range fs {
		if f.ID == "sack-off" || f.ID == "timestamps-off" || f.ID == "bottleneck" {
			t.Errorf("%s from a zeroed sample: %s", f.ID, f.Summary)
		}
	}
}

// TestLossCoLimit: loss binds beside the window only for a loss-based
// sender whose rate is at its Mathis bound. One or two retransmissions
// made a BBR sender (which does not slow down for loss) "loss-limited"
// beside wscale-off and sndbuf-limited in the scenario suite, at half its
// bound.
func TestLossCoLimit(t *testing.T) {
	for _, tc := range []struct {
		cc   string
		loss float64 // retransmitted share
		want []string
	}{
		{"bbr", 0.00022, []string{"wscale-off"}},                 // the scenario's run: 2 segments, half the bound
		{"cubic", 0.00022, []string{"wscale-off"}},               // a loss-based sender at half its bound
		{"cubic", 0.001, []string{"wscale-off", "loss-limited"}}, // at its bound: both bind
	} {
		run := load(t, "wscale-off")
		run.Summary[0].LossRate = model.Some(tc.loss)
		// The segments that share is, of the 8,700 the run sent.
		run.Summary[0].RetransSegs = model.Some(uint32(math.Round(tc.loss * float64(run.Summary[0].SenderBytes.V) / 1448)))
		run.Client.Totals[0].Final.Congestion = tc.cc
		if got := primaries(Test(run, Options{})); !slices.Equal(got, tc.want) {
			t.Errorf("%s at %.3g%% loss: primary %v, want %v", tc.cc, 100*tc.loss, got, tc.want)
		}
	}
}

// TestBBROwnLossNotLossyPath: BBR on a clean path with a one-BDP
// drop-tail queue overflows it in its bandwidth probes (lab precision
// "100 Mbit/s, 10 ms, bbr": 0.3% and 1.1% retransmitted, some seconds
// with almost none). That is its own congestion loss, not a lossy path:
// under 1% the verdict is the bottleneck with no warning. At 1% or more
// the loss is named whatever caused it (a warning that says it cost the
// transfer no rate), and the headline stays the bottleneck. Random loss
// under BBR (0.3% at 40 ms, 20 to 30 retransmissions every second) is
// named either way.
func TestBBROwnLossNotLossyPath(t *testing.T) {
	for _, c := range []struct {
		file  string
		lossy model.Severity // "": no lossy-path
	}{
		{"bottleneck.bbr-overflow.json", ""},
		{"bottleneck.bbr-overflow-2.json", model.Warning},
		{"bottleneck.lan-bbr.json", model.Warning},
		{"lossy-path.json", model.Info},
		{"lossy-path.bbr-40ms.json", model.Info},
	} {
		got := Test(load(t, strings.TrimSuffix(c.file, ".json")), Options{})
		var sev model.Severity
		for _, f := range got {
			if f.ID == "lossy-path" {
				sev = f.Severity
				if f.Severity != model.Info && !strings.Contains(f.Summary, "cost this transfer no rate") {
					t.Errorf("%s: heavy loss at the path's rate does not say what it cost: %s", c.file, f.Summary)
				}
				if !strings.Contains(f.Summary, "-C cubic") {
					t.Errorf("%s: lossy-path does not name the test that tells bbr's own loss from the path's: %s", c.file, f.Summary)
				}
			}
		}
		if sev != c.lossy {
			t.Errorf("%s: findings %v, lossy-path %q, want %q", c.file, ids(got), sev, c.lossy)
		}
		want := model.Info
		if c.lossy == model.Warning {
			want = model.Warning
		}
		if got[0].ID != "bottleneck" || got[0].Severity != want {
			t.Errorf("%s: verdict %s [%s], want bottleneck [%s]", c.file, got[0].ID, got[0].Severity, want)
		}
	}
}

// TestNoSilentLoss holds the rule over every recording: a direction
// whose sender retransmitted 1% or more of its bytes, or spent 5% of
// its life in timeouts, has a finding of warning severity or more that
// names the loss (lossy-path, loss-limited, policer, rto-stalls or
// pmtu-blackhole), and one that says what the loss cost unless the
// black hole's stall is the whole story. Before the rule a 50 Mbit/s
// policer losing 1.2% behind a 300 Mbit/s, 40 ms path was an info
// "bottleneck ... how a healthy transfer looks", alone.
func TestNoSilentLoss(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	heavyRuns := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		run := load(t, name)
		fs := Test(run, Options{})
		for _, v := range views(run) {
			if !heavy(v) {
				continue
			}
			heavyRuns++
			named := slices.ContainsFunc(fs, func(f model.Finding) bool {
				return f.Direction == v.dir && f.Severity.Rank() <= model.Warning.Rank() &&
					slices.Contains([]string{"lossy-path", "loss-limited", "policer", "rto-stalls", "pmtu-blackhole"}, f.ID)
			})
			if !named {
				t.Errorf("%s %s: %.2f%% retransmitted, %s of the life in timeouts, and no loss finding of warning severity: %v",
					name, v.dir, 100*v.loss, pct(v.rtoShare()), ids(fs))
			}
		}
	}
	if heavyRuns < 5 {
		t.Errorf("only %d recorded directions with heavy loss: the property is not exercised", heavyRuns)
	}
}

// TestReordering: reordering is counted per ACK that showed it, so a
// fast path whose receiver acknowledges many segments at once still
// shows it (852 Mbit/s, 3.4% reordered: 123 reorderings, 0.045% of the
// segments sent and 0.41% of the ACKs, r2000#54); it is a warning only
// where it cost spurious retransmissions.
func TestReordering(t *testing.T) {
	severity := func(run *model.Run) (model.Severity, bool) {
		for _, f := range Test(run, Options{}) {
			if f.ID == "reordering" {
				return f.Severity, true
			}
		}
		return "", false
	}
	for _, name := range []string{"reordering.fast-path", "reordering.1pct", "reordering"} {
		if sev, ok := severity(load(t, name)); !ok || sev != model.Info {
			t.Errorf("%s: reordering %q (found %v), want information: the sender absorbed it", name, sev, ok)
		}
	}
	// The same run with a DSACK for every tenth reordering retransmitted
	// for nothing is a warning.
	run := load(t, "reordering.1pct")
	for i := range run.Client.Totals {
		if f := run.Client.Totals[i].Final; f != nil && f.ReordSeen.V > 0 {
			f.DSACKDups = model.Some(max(f.ReordSeen.V, 100))
		}
	}
	if sev, _ := severity(run); sev != model.Warning {
		t.Errorf("reordering with spurious retransmissions: %q, want a warning", sev)
	}
	// Without the ACK count, the share of segments decides: the fast
	// path's reordering is under 0.1% of them.
	run = load(t, "reordering.fast-path")
	for _, end := range []*model.EndReport{&run.Client, &run.Remote} {
		for i := range end.Totals {
			if f := end.Totals[i].Final; f != nil {
				f.SegsIn = model.Opt[uint32]{}
			}
		}
	}
	if _, ok := severity(run); ok {
		t.Errorf("reordering found in 0.045%% of the segments with no ACK count")
	}
}

// TestLossCostAgainstSlowStart: slow start found the path's ceiling, and
// a measured time that never came back to it after slow start's loss
// was not at the path's rate, whatever its own peak. Cubic at 165 ms
// behind a 264 KiB send buffer lost 2.5% in slow start's overshoot and
// ran at 5.51 Mbit/s of a 13.6 Mbit/s path, at 0.89 of its measured
// peak, and the loss was said to cost nothing (r6000#19). The send
// buffer that then capped the regrown window (89 segments, what 264 KiB
// holds) is not read from these samples yet: the verdict is the loss.
func TestLossCostAgainstSlowStart(t *testing.T) {
	for _, f := range Test(load(t, "loss-limited.regrowing-under-buffer"), Options{}) {
		if strings.Contains(f.Summary, "cost this transfer no rate") || f.ID == "bottleneck" {
			t.Errorf("%s: %s", f.ID, f.Summary)
		}
	}
}

// TestNoPolicerWithoutMeasuredDrops: cubic at 124.7 ms behind a 377 KiB
// receive buffer and a 0.24 BDP queue lost 2.8% in slow start, none in
// any measured interval, and regrew: read as a policer the sender had
// outrun (r6000#107, kernel backend). Nothing dropped in the measured
// time, so nothing there shows a policer.
func TestNoPolicerWithoutMeasuredDrops(t *testing.T) {
	for _, f := range Test(load(t, "loss-limited.spill-under-window"), Options{}) {
		if f.ID == "policer" {
			t.Errorf("%s: %s", f.ID, f.Summary)
		}
	}
}
