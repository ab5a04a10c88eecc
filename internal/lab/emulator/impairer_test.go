package emulator

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

func testImpairer(d Impairment, seed uint64) (*impairer, *counters) {
	c := new(counters)
	return newImpairer(d, rand.New(rand.NewPCG(seed, 1)), c), c
}

// z99 is the two-sided 99% quantile of the standard normal distribution.
const z99 = 2.5758

// binomialOK reports whether k successes in n trials are within the 99%
// normal-approximation interval of probability p.
func binomialOK(k, n int, p float64) (ok bool, lo, hi float64) {
	half := z99 * math.Sqrt(p*(1-p)/float64(n))
	got := float64(k) / float64(n)
	return got >= p-half && got <= p+half, p - half, p + half
}

func TestRandomLoss(t *testing.T) {
	for _, p := range []float64{0.001, 0.01, 0.1, 0.5} {
		im, c := testImpairer(Impairment{Loss: p}, 42)
		const n = 200_000
		kept := 0
		for i := range n {
			kept += im.arrive(time.Duration(i)*time.Microsecond, 1500).n
		}
		lost := int(c.droppedLoss.Load())
		if lost+kept != n {
			t.Errorf("loss %v: %d lost + %d kept ≠ %d", p, lost, kept, n)
		}
		if ok, lo, hi := binomialOK(lost, n, p); !ok {
			t.Errorf("loss %v: %d of %d lost (%.5f), want within [%.5f, %.5f]", p, lost, n, float64(lost)/n, lo, hi)
		}
	}
	// The extremes are exact.
	for _, p := range []float64{0, 1} {
		im, c := testImpairer(Impairment{Loss: p}, 1)
		for i := range 1000 {
			im.arrive(time.Duration(i), 100)
		}
		if got := c.droppedLoss.Load(); got != uint64(p*1000) {
			t.Errorf("loss %v: %d of 1000 lost", p, got)
		}
	}
}

func TestGilbertElliott(t *testing.T) {
	ge := GilbertElliott{P: 0.01, R: 0.1, LossGood: 0.001, LossBad: 0.5}
	want := ge.MeanLoss()
	if math.Abs(want-(0.01/0.11*0.5+0.1/0.11*0.001)) > 1e-15 {
		t.Fatalf("MeanLoss = %v", want)
	}
	im, c := testImpairer(Impairment{GE: &ge}, 7)
	const n = 1_000_000
	var lost, afterLoss, lostAfterLoss int
	prevLost := false
	for i := range n {
		gone := im.arrive(time.Duration(i)*time.Microsecond, 1500).n == 0
		if gone {
			lost++
		}
		if prevLost {
			afterLoss++
			if gone {
				lostAfterLoss++
			}
		}
		prevLost = gone
	}
	if got := int(c.droppedGE.Load()); got != lost || c.droppedLoss.Load() != 0 {
		t.Errorf("counted %d GE and %d random losses, saw %d", got, c.droppedLoss.Load(), lost)
	}
	// Losses come in bursts, so the count varies more than a binomial
	// one: about 9,100 visits to the bad state in a million packets give
	// a relative SD near 1.5%; 5% is over three of them.
	got := float64(lost) / n
	if math.Abs(got-want)/want > 0.05 {
		t.Errorf("GE loss %.5f over %d packets, want %.5f ± 5%%", got, n, want)
	}
	// Bursty: right after a loss, a loss is far likelier than on average
	// (in the bad state it is LossBad·(1−R) + …, about 0.45).
	if cond := float64(lostAfterLoss) / float64(afterLoss); cond < 5*want {
		t.Errorf("P(loss | loss before) = %.3f, mean %.3f: losses are not bursty", cond, want)
	}
	t.Logf("GE: mean loss %.5f (model %.5f), P(loss | loss) %.3f", got, want, float64(lostAfterLoss)/float64(afterLoss))
}

func TestBothLosses(t *testing.T) {
	// Random loss is counted first; the chain steps for every packet.
	ge := GilbertElliott{P: 0.5, R: 0.5, LossBad: 1}
	im, c := testImpairer(Impairment{Loss: 0.1, GE: &ge}, 3)
	const n = 100_000
	for i := range n {
		im.arrive(time.Duration(i), 100)
	}
	want := 0.1 + 0.9*ge.MeanLoss()
	got := float64(c.droppedLoss.Load()+c.droppedGE.Load()) / n
	if math.Abs(got-want) > 0.01 {
		t.Errorf("combined loss %.4f, want %.4f", got, want)
	}
	if ok, lo, hi := binomialOK(int(c.droppedLoss.Load()), n, 0.1); !ok {
		t.Errorf("random loss %d of %d, want within [%.4f, %.4f]", c.droppedLoss.Load(), n, lo, hi)
	}
}

func TestDelayAndJitter(t *testing.T) {
	const delay, jitter = 10 * time.Millisecond, 2 * time.Millisecond
	// Sparse packets (one a second) never wait for each other: their
	// delays are the distribution itself.
	im, _ := testImpairer(Impairment{Delay: delay, Jitter: jitter}, 11)
	var sum, sumSq float64
	const n = 20_000
	for i := range n {
		now := time.Duration(i) * time.Second
		f := im.arrive(now, 100)
		d := f.leave[0] - now
		if f.n != 1 || d < delay-3*jitter || d > delay+3*jitter {
			t.Fatalf("packet %d: fate %+v, delay %v outside Delay ± 3 SD", i, f, d)
		}
		x := float64(d - delay)
		sum += x
		sumSq += x * x
	}
	mean := time.Duration(sum / n)
	sd := time.Duration(math.Sqrt(sumSq/n - (sum/n)*(sum/n)))
	// The normal truncated at ±3 SD has an SD of 0.9866 SD.
	if mean.Abs() > 100*time.Microsecond || math.Abs(float64(sd)/float64(jitter)-0.9866) > 0.03 {
		t.Errorf("jitter: mean offset %v, SD %v; want about 0 and %v", mean, sd, time.Duration(0.9866*float64(jitter)))
	}

	// Without jitter the delay is exact.
	im, _ = testImpairer(Impairment{Delay: delay}, 1)
	if f := im.arrive(5*time.Millisecond, 1500); f.n != 1 || f.leave[0] != 15*time.Millisecond || f.ahead[0] {
		t.Errorf("fixed delay: %+v", f)
	}

	// Jitter larger than the delay: never negative.
	im, _ = testImpairer(Impairment{Delay: time.Millisecond, Jitter: 5 * time.Millisecond}, 5)
	for i := range 10_000 {
		now := time.Duration(i) * time.Second
		if f := im.arrive(now, 100); f.leave[0] < now {
			t.Fatalf("packet left %v before it arrived", now-f.leave[0])
		}
	}
}

func TestJitterKeepsOrder(t *testing.T) {
	// Dense packets (10 µs apart) with jitter of 1 ms: each would often
	// overtake the one ahead, but without Reorder none does.
	im, c := testImpairer(Impairment{Delay: 5 * time.Millisecond, Jitter: time.Millisecond}, 9)
	var prev time.Duration
	held := 0
	for i := range 100_000 {
		now := time.Duration(i) * 10 * time.Microsecond
		f := im.arrive(now, 100)
		if f.n != 1 || f.ahead[0] {
			t.Fatalf("packet %d: %+v", i, f)
		}
		if f.leave[0] < prev {
			t.Fatalf("packet %d leaves at %v, before the one ahead (%v)", i, f.leave[0], prev)
		}
		if f.leave[0] == prev {
			held++
		}
		prev = f.leave[0]
	}
	if c.reordered.Load() != 0 {
		t.Errorf("%d reordered with Reorder 0", c.reordered.Load())
	}
	if held == 0 {
		t.Error("no packet was held behind the one ahead: the test does not exercise ordering")
	}
}

func TestReorder(t *testing.T) {
	const p = 0.1
	im, c := testImpairer(Impairment{Delay: 10 * time.Millisecond, Reorder: p}, 13)
	type out struct {
		seq   int
		leave time.Duration
		ahead bool
	}
	var outs []out
	const n = 50_000
	for i := range n {
		now := time.Duration(i) * 100 * time.Microsecond
		f := im.arrive(now, 1500)
		if f.n != 1 {
			t.Fatalf("fate %+v", f)
		}
		if f.leave[0] < now {
			t.Fatalf("packet %d leaves before it arrives", i)
		}
		outs = append(outs, out{i, f.leave[0], f.ahead[0]})
	}
	// Put them in the order the writer sends them, then count the
	// packets that arrive before one sent earlier.
	slices.SortStableFunc(outs, func(a, b out) int {
		switch {
		case a.leave != b.leave:
			return int(a.leave - b.leave)
		case a.ahead != b.ahead:
			if a.ahead {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	// A packet overtook if one sent earlier arrives after it.
	overtook := 0
	minAfter := math.MaxInt
	for i := len(outs) - 1; i >= 0; i-- {
		if minAfter < outs[i].seq {
			overtook++
		}
		minAfter = min(minAfter, outs[i].seq)
	}
	if got := int(c.reordered.Load()); got != overtook {
		t.Errorf("counted %d reordered, %d overtakes in the output", got, overtook)
	}
	// Every draw finds a packet ahead in the line (10 ms of delay, one
	// packet per 100 µs), so the count is binomial.
	if ok, lo, hi := binomialOK(overtook, n, p); !ok {
		t.Errorf("%d of %d reordered, want within [%.4f, %.4f]", overtook, n, lo, hi)
	}
	// A reordered packet leaves with the last in-order packet ahead of
	// it: its delay shrinks by the gap to that one, 100 µs per packet
	// between them, and no more.
	for _, o := range outs {
		d := o.leave - time.Duration(o.seq)*100*time.Microsecond
		if o.ahead && (d >= 10*time.Millisecond || d < 9*time.Millisecond) {
			t.Fatalf("reordered packet %d left after %v", o.seq, d)
		}
	}

	// An idle line has nothing to overtake.
	im, c = testImpairer(Impairment{Delay: 10 * time.Millisecond, Reorder: 1}, 1)
	for i := range 100 {
		now := time.Duration(i) * time.Second
		if f := im.arrive(now, 100); f.ahead[0] || f.leave[0] != now+10*time.Millisecond {
			t.Fatalf("%+v", f)
		}
	}
	if c.reordered.Load() != 0 {
		t.Errorf("reordered %d packets on an idle line", c.reordered.Load())
	}
}

func TestDuplicate(t *testing.T) {
	const p = 0.05
	im, c := testImpairer(Impairment{Delay: time.Millisecond, Duplicate: p}, 17)
	const n = 100_000
	copies := 0
	for i := range n {
		now := time.Duration(i) * time.Millisecond
		f := im.arrive(now, 1500)
		copies += f.n
		if f.n == 2 && (f.leave[0] != f.leave[1] || f.leave[0] != now+time.Millisecond) {
			t.Fatalf("duplicate leaves at %v, original at %v", f.leave[1], f.leave[0])
		}
	}
	dup := int(c.duplicated.Load())
	if copies != n+dup {
		t.Errorf("%d copies out of %d packets with %d duplicated", copies, n, dup)
	}
	if ok, lo, hi := binomialOK(dup, n, p); !ok {
		t.Errorf("%d of %d duplicated, want within [%.4f, %.4f]", dup, n, lo, hi)
	}
}

func TestSerialization(t *testing.T) {
	// 100 Mbit/s: 1500 bytes take 120 µs. Five packets at once leave one
	// serialization apart, then the propagation delay.
	im, _ := testImpairer(Impairment{Rate: 100 * model.MbitPerSecond, Delay: time.Millisecond}, 1)
	for i := range 5 {
		f := im.arrive(0, 1500)
		if want := time.Duration(i+1)*120*time.Microsecond + time.Millisecond; f.n != 1 || f.leave[0] != want {
			t.Errorf("packet %d leaves at %v, want %v", i, f.leave[0], want)
		}
	}
	// An idle bottleneck starts at once: 40 bytes take 3.2 µs.
	if f := im.arrive(time.Second, 40); f.leave[0] != time.Second+3200*time.Nanosecond+time.Millisecond {
		t.Errorf("after idle: leaves at %v", f.leave[0])
	}

	// Offered at twice the rate for a second, with room to queue it all,
	// the bottleneck delivers exactly its rate.
	rate := 10 * model.MbitPerSecond
	im, c := testImpairer(Impairment{Rate: rate, Queue: Queue{Packets: 1 << 20}}, 1)
	const size = 1000
	gap := time.Duration(float64(size*8) / float64(2*rate) * float64(time.Second))
	var first, last time.Duration
	const n = 2500
	for i := range n {
		f := im.arrive(time.Duration(i)*gap, size)
		if i == 0 {
			first = f.leave[0] - time.Duration(float64(size*8)/float64(rate)*float64(time.Second))
		}
		last = f.leave[0]
	}
	got := model.RateOf(n*size, (last - first).Seconds())
	if math.Abs(float64(got/rate)-1) > 1e-6 || c.droppedQueue.Load() != 0 {
		t.Errorf("delivered %v through a %v bottleneck (%d dropped)", got, rate, c.droppedQueue.Load())
	}
}

// TestPolicer: a token bucket holds the rate by dropping, never by
// delaying: what passes leaves at once (plus the line's delay), the bucket
// starts full, and over a long run the bytes that pass are the rate's
// worth plus one bucket.
func TestPolicer(t *testing.T) {
	rate := 10 * model.MbitPerSecond // 1.25 MB/s
	pol := &Policer{Rate: rate, Burst: 15_000}
	im, c := testImpairer(Impairment{Police: pol, Delay: time.Millisecond}, 1)
	// A full bucket passes ten packets at once, all without delay; the
	// eleventh finds it empty.
	for i := range 11 {
		f := im.arrive(0, 1500)
		switch {
		case i < 10 && (f.n != 1 || f.leave[0] != time.Millisecond):
			t.Errorf("packet %d: %d copies leaving at %v, want one at 1ms", i, f.n, f.leave[0])
		case i == 10 && f.n != 0:
			t.Errorf("packet 11 passed an empty bucket")
		}
	}
	// 1.3 ms later the bucket holds 1625 bytes: one more passes.
	if f := im.arrive(1300*time.Microsecond, 1500); f.n != 1 {
		t.Error("a refilled bucket dropped the packet")
	}
	if c.droppedPolice.Load() != 1 || c.droppedQueue.Load() != 0 {
		t.Errorf("dropped %d by the policer, %d by a queue; want 1 and 0", c.droppedPolice.Load(), c.droppedQueue.Load())
	}

	// Offered at three times the rate for 10 s, it passes 10 s of the
	// rate and the bucket it started with, and drops the rest.
	im, c = testImpairer(Impairment{Police: pol}, 1)
	const size = 1000
	gap := time.Duration(float64(size*8) / float64(3*rate) * float64(time.Second))
	const n = 37_500 // 10 s
	passed := 0
	for i := range n {
		if f := im.arrive(time.Duration(i)*gap, size); f.n == 1 {
			if f.leave[0] != time.Duration(i)*gap {
				t.Fatalf("packet %d delayed to %v", i, f.leave[0])
			}
			passed++
		}
	}
	want := rate.BytesPerSecond()*(time.Duration(n-1)*gap).Seconds() + 15_000
	if got := float64(passed * size); math.Abs(got-want) > size {
		t.Errorf("passed %.0f B, want %.0f ± %d", got, want, size)
	}
	if int(c.droppedPolice.Load())+passed != n {
		t.Errorf("%d dropped + %d passed ≠ %d", c.droppedPolice.Load(), passed, n)
	}

	// Below the rate nothing is dropped, and lost packets take no tokens.
	im, c = testImpairer(Impairment{Police: &Policer{Rate: rate}, Loss: 0.5}, 3)
	for i := range 10_000 {
		im.arrive(time.Duration(i)*time.Millisecond, 1500) // 12 Mbit/s offered, 6 after loss
	}
	if c.droppedPolice.Load() != 0 || c.droppedLoss.Load() == 0 {
		t.Errorf("policer dropped %d of a stream under its rate (%d lost at random)", c.droppedPolice.Load(), c.droppedLoss.Load())
	}
	if got := DefaultBurst(rate); got != 15_000 {
		t.Errorf("default burst at 10 Mbit/s: %v, want 10 packets (15000 B)", got)
	}
	if got := DefaultBurst(model.GbitPerSecond); got != 1_250_000 {
		t.Errorf("default burst at 1 Gbit/s: %v, want 10 ms (1250000 B)", got)
	}
}

func TestQueueLimits(t *testing.T) {
	rate := 100 * model.MbitPerSecond // 1500 bytes: 120 µs
	for _, tc := range []struct {
		name  string
		queue Queue
		kept  int // of 10 packets of 1500 bytes arriving at once
	}{
		// One in service, three waiting.
		{"packets", Queue{Packets: 3}, 4},
		// Waiting bytes, the arriving packet included, up to 4500.
		{"bytes", Queue{Bytes: 4500}, 4},
		{"bytes not a multiple", Queue{Bytes: 5999}, 4},
		// Packet k waits k×120 µs: 0, 120, 240 ≤ 250 µs.
		{"time", Queue{Time: 250 * time.Microsecond}, 3},
		// The first non-zero limit wins.
		{"packets first", Queue{Packets: 1, Bytes: 1 << 20, Time: time.Hour}, 2},
		{"bytes before time", Queue{Bytes: 1500, Time: time.Hour}, 2},
		// Default: 100 ms of 12.5 MB/s is 1.25 MB, far more than 10 packets.
		{"default", Queue{}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, c := testImpairer(Impairment{Rate: rate, Queue: tc.queue}, 1)
			kept := 0
			for range 10 {
				kept += im.arrive(0, 1500).n
			}
			if kept != tc.kept || int(c.droppedQueue.Load()) != 10-tc.kept {
				t.Errorf("kept %d, dropped %d; want %d kept", kept, c.droppedQueue.Load(), tc.kept)
			}
		})
	}

	// The queue drains: 480 µs later the four kept have left and four
	// more fit.
	im, c := testImpairer(Impairment{Rate: rate, Queue: Queue{Packets: 3}}, 1)
	for range 10 {
		im.arrive(0, 1500)
	}
	kept := 0
	for range 10 {
		kept += im.arrive(480*time.Microsecond, 1500).n
	}
	if kept != 4 || c.droppedQueue.Load() != 12 {
		t.Errorf("after draining: kept %d, dropped %d in all; want 4 and 12", kept, c.droppedQueue.Load())
	}
	// Partly drained: at 60 µs into the second packet's service, two wait.
	im, _ = testImpairer(Impairment{Rate: rate, Queue: Queue{Packets: 3}}, 1)
	for range 4 {
		im.arrive(0, 1500)
	}
	if f := im.arrive(180*time.Microsecond, 1500); f.n != 1 {
		t.Error("a packet was refused with two waiting of three")
	}
	if f := im.arrive(180*time.Microsecond, 1500); f.n != 0 {
		t.Error("a packet was taken with three waiting of three")
	}
}

func TestDefaultQueue(t *testing.T) {
	for _, tc := range []struct {
		rate model.Bitrate
		want model.Bytes
	}{
		{100 * model.MbitPerSecond, 1_250_000},
		{1 * model.GbitPerSecond, 12_500_000},
		{1 * model.MbitPerSecond, 15_000}, // 12.5 kB is under 10 packets
		{64 * model.KbitPerSecond, 15_000},
	} {
		if got := DefaultQueue(tc.rate); got != (Queue{Bytes: tc.want}) {
			t.Errorf("DefaultQueue(%v) = %+v, want %d bytes", tc.rate, got, tc.want)
		}
	}
	if (Impairment{Queue: Queue{Packets: 5}}).limit() != (Queue{}) {
		t.Error("a queue without a rate should not apply")
	}
}

func TestDeterministic(t *testing.T) {
	ge := GilbertElliott{P: 0.05, R: 0.3, LossBad: 0.3}
	d := Impairment{Delay: 3 * time.Millisecond, Jitter: time.Millisecond, Rate: 50 * model.MbitPerSecond,
		Loss: 0.01, GE: &ge, Reorder: 0.02, Duplicate: 0.01, Queue: Queue{Packets: 20}}
	run := func(seed uint64) []fate {
		im, _ := testImpairer(d, seed)
		var fs []fate
		for i := range 10_000 {
			fs = append(fs, im.arrive(time.Duration(i)*50*time.Microsecond, 200+i%1300))
		}
		return fs
	}
	a, b, other := run(99), run(99), run(100)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave different fates")
	}
	if slices.Equal(a, other) {
		t.Error("different seeds gave the same fates")
	}
}

func TestValidate(t *testing.T) {
	good := []Impairment{
		{},
		{Delay: time.Second, Jitter: time.Millisecond, Rate: model.KbitPerSecond, Loss: 1, Reorder: 1, Duplicate: 1, MTU: 68},
		{MTU: 65535, BlackHole: true, GE: &GilbertElliott{P: 1, R: 1, LossGood: 1, LossBad: 1}},
		{Police: &Policer{Rate: model.KbitPerSecond}, Rate: model.MbitPerSecond},
		{Police: &Policer{Rate: model.GbitPerSecond, Burst: 1500}},
	}
	for _, d := range good {
		if err := (Config{AtoB: d, BtoA: d}).Validate(); err != nil {
			t.Errorf("%+v: %v", d, err)
		}
	}
	bad := []Impairment{
		{Delay: -1},
		{Jitter: -1},
		{Rate: -1},
		{Rate: model.Bitrate(math.Inf(1))},
		{Rate: model.Bitrate(math.NaN())},
		{Rate: 999},
		{Loss: 1.1},
		{Loss: math.NaN()},
		{Reorder: -0.1},
		{Duplicate: 2},
		{GE: &GilbertElliott{P: -1}},
		{GE: &GilbertElliott{LossBad: 1.5}},
		{MTU: 67},
		{MTU: 65536},
		{BlackHole: true},
		{Queue: Queue{Packets: -1}},
		{Queue: Queue{Time: -1}},
		{Police: &Policer{}},
		{Police: &Policer{Rate: 999}},
		{Police: &Policer{Rate: model.Bitrate(math.NaN())}},
		{Police: &Policer{Rate: model.MbitPerSecond, Burst: 1499}},
		{Police: &Policer{Rate: model.MbitPerSecond, Burst: -1}},
	}
	for _, d := range bad {
		if err := (Config{BtoA: d}).Validate(); err == nil {
			t.Errorf("%+v: accepted", d)
		}
	}
}

func TestJitterDistributions(t *testing.T) {
	// Sparse packets: each delay is a draw. Every shape has mean 0 and SD
	// Jitter (the truncated normal 0.987); the shapes differ in range and
	// skew.
	const delay, jitter = 50 * time.Millisecond, 4 * time.Millisecond
	for _, tc := range []struct {
		dist             Distribution
		sd               float64
		lo, hi           float64 // standardized range every draw must lie in
		skewMin, skewMax float64
	}{
		{Normal, 0.9866, -3, 3, -0.1, 0.1},
		{Uniform, 1, -math.Sqrt(3), math.Sqrt(3), -0.1, 0.1},
		{Pareto, 1, -0.636, 23.68, 1.5, math.Inf(1)},
		{ParetoNormal, 1, -1.6, 23.5, 1, math.Inf(1)},
	} {
		t.Run(tc.dist.String(), func(t *testing.T) {
			im, _ := testImpairer(Impairment{Delay: delay, Jitter: jitter, JitterDist: tc.dist}, 3)
			const n = 100_000
			zs := make([]float64, n)
			var sum float64
			for i := range zs {
				now := time.Duration(i) * time.Second
				f := im.arrive(now, 100)
				z := float64(f.leave[0]-now-delay) / float64(jitter)
				if z < tc.lo-1e-6 || z > tc.hi+1e-6 {
					t.Fatalf("draw %d: %.3f SD, outside [%.3f, %.3f]", i, z, tc.lo, tc.hi)
				}
				zs[i] = z
				sum += z
			}
			mean := sum / n
			var m2, m3 float64
			for _, z := range zs {
				m2 += (z - mean) * (z - mean)
				m3 += (z - mean) * (z - mean) * (z - mean)
			}
			sd := math.Sqrt(m2 / n)
			skew := m3 / n / (sd * sd * sd)
			if math.Abs(mean) > 0.02 || math.Abs(sd-tc.sd) > 0.03 || skew < tc.skewMin || skew > tc.skewMax {
				t.Errorf("mean %.3f SD, SD %.3f, skew %.2f; want 0, %.3f, skew in [%.1f, %.1f]",
					mean, sd, skew, tc.sd, tc.skewMin, tc.skewMax)
			}
		})
	}
	for _, s := range []string{"normal", "uniform", "pareto", "paretonormal"} {
		d, err := ParseDistribution(s)
		if err != nil || d.String() != s {
			t.Errorf("ParseDistribution(%q) = %v, %v", s, d, err)
		}
	}
	if _, err := ParseDistribution("gaussian"); err == nil {
		t.Error("ParseDistribution(gaussian): no error")
	}
	if err := (Config{AtoB: Impairment{JitterDist: 9}}).Validate(); err == nil {
		t.Error("Validate accepted distribution 9")
	}
}

func TestParetoConstants(t *testing.T) {
	const c = paretoMax
	f := 1 - math.Pow(c, -paretoShape)
	mean := 1.5 * (1 - math.Pow(c, -2)) / f
	sd := math.Sqrt(3*(1-1.0/c)/f - mean*mean)
	if math.Abs(mean-paretoMean) > 1e-12 || math.Abs(sd-paretoSD) > 1e-12 {
		t.Errorf("truncated Pareto: mean %v SD %v, constants say %v and %v", mean, sd, paretoMean, paretoSD)
	}
}
