package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Thresholds of the CPU rule; docs/DIAGNOSES.md explains them.
const (
	// cpuBusy: an end that used at least this share of the CPU it may
	// use (a core per stream, its CPUs, its cgroup's quota) had none to
	// spare. getrusage's ticks and a cgroup's throttling periods put a
	// fully busy end at 0.9 to 1.0 of it over an interval (a loopback
	// sender starved to 20% of a core measured 17.6% in the median).
	cpuBusy = 0.8
	// cpuSpare: over loopback, the other end below this share of what
	// it may use had CPU to spare: it was waiting, not working.
	cpuSpare = 0.7
	// cpuThrottled: an end whose cgroup's quota throttled it in at least
	// this share of its periods (the median interval's) wanted more CPU
	// than it was given, however little it used: a loopback sender held
	// to 20% of a core used 14% of one, throttled in most periods.
	cpuThrottled = 0.5
)

// endCPU is one end's CPU use beside what it may use, in cores.
type endCPU struct {
	side model.Side
	role model.Role
	// used is the median over the end's measured intervals of its
	// process's CPU use (perInterval, n intervals), or its whole test's
	// when its intervals carry none (a stock iperf3 peer).
	used        float64
	usedAt      model.CPUUse
	perInterval bool
	n           int
	// may is what the end may use: a core per stream (each stream is
	// one goroutine, on one core at a time), its CPUs and its cgroup's
	// quota, the least of them; bound names which.
	may     float64
	bound   string
	streams int
	cpus    model.Opt[int]
	quota   model.Opt[float64]
	// throttled is the median interval's share of quota periods that
	// throttled the end (or its whole test's); throttledOK says known.
	throttled   float64
	throttledOK bool
}

// CPU bounds, by what set them.
const (
	boundStreams = "streams"
	boundCPUs    = "cpus"
	boundQuota   = "quota"
)

func (c *endCPU) busy() float64 { return c.used / c.may }

// saturated: the end used (nearly) all the CPU it may, or its quota
// throttled it most of the time.
func (c *endCPU) saturated() bool {
	return c.busy() >= cpuBusy || (c.throttledOK && c.throttled >= cpuThrottled)
}

// heldBelow: the end was held below a core per stream, by its quota or
// its CPUs, or its quota throttled it. Over loopback an end at a core per
// stream is every unpaced test (one stream's sender carried 40 Gbit/s at
// 95% of a core, doing the receiver's kernel work too, beside a receiver
// at 58%): that is the host's CPUs setting the rate, the local bottleneck,
// not one end short of CPU.
func (c *endCPU) heldBelow() bool {
	return c.bound != boundStreams || (c.throttledOK && c.throttled >= cpuThrottled)
}

// spare: the end had CPU it did not use, and no quota held it back.
func (c *endCPU) spare() bool {
	return c.busy() < cpuSpare && (!c.throttledOK || c.throttled < cpuThrottled)
}

// cpuOf reduces an end's CPU account; ok is false when the end did not
// report its CPU use at all.
func cpuOf(run *model.Run, e *model.EndReport, role model.Role) (endCPU, bool) {
	c := endCPU{side: e.Side, role: role, cpus: e.CPUs, quota: e.CPUQuota, streams: max(len(run.Config.Directions()), 1)}
	var totals, throttled []float64
	byTotal := map[float64]model.CPUUse{}
	for _, iv := range e.Intervals {
		if iv.CPU == nil || iv.Omitted {
			continue
		}
		totals = append(totals, iv.CPU.Total)
		byTotal[iv.CPU.Total] = *iv.CPU
		if x, ok := iv.CPU.Throttled.Get(); ok {
			throttled = append(throttled, x)
		}
	}
	switch {
	case len(totals) > 0:
		m := median(totals)
		c.used, c.usedAt, c.perInterval, c.n = m/100, byTotal[m], true, len(totals)
		if len(throttled) > 0 {
			c.throttled, c.throttledOK = median(throttled), true
		}
	case e.CPU != nil:
		c.used, c.usedAt = e.CPU.Total/100, *e.CPU
		c.throttled, c.throttledOK = e.CPU.Throttled.Get()
	default:
		return endCPU{}, false
	}
	c.may, c.bound = float64(c.streams), boundStreams
	if n, ok := c.cpus.Get(); ok && n > 0 && float64(n) < c.may {
		c.may, c.bound = float64(n), boundCPUs
	}
	if q, ok := c.quota.Get(); ok && q > 0 && q < c.may {
		c.may, c.bound = q, boundQuota
	}
	return c, true
}

// cpuBound: one end's CPU is the bottleneck. It used (nearly) all the
// CPU it may use, and its kernel agrees that it could not keep up: a
// sender with nothing queued most of the time (application-limited), or
// over loopback one held below a core per stream whose receiver had CPU
// to spare and did not hold the window most of the time; or
// a receiver whose unread data held the window (slow-reading, or the
// window held by a full receive queue or closing). Over loopback a
// receiver's backlog is what the sender's congestion window holds: a
// sender with CPU to spare that had data most of the time waited for the
// receiver (no path lies between them to lose packets: what the backlog
// drops is the receiver's doing). A sender held by its congestion
// window (the network: cwnd-limited, with or without loss) is never
// named, however busy, nor one that reached the rate -b asked for; a
// receiver is named only when its unread data held the window, what the
// slow-reader rule reads, queue on the path or not.
func cpuBound(v *view, run *model.Run) (model.Finding, bool) {
	snd, rcv := &run.Client, &run.Remote
	if v.sender == model.ServerSide {
		snd, rcv = rcv, snd
	}
	sc, sok := cpuOf(run, snd, model.Sender)
	rc, rok := cpuOf(run, rcv, model.Receiver)
	asked := float64(run.Config.Bitrate) * float64(max(v.streams, 1))
	paced := asked > 0 && v.receivedOK && float64(v.goodput) >= appRateShare*asked
	if sok && sc.saturated() && !paced && v.sndKernel {
		appTime := v.limitedOK && v.limited.App >= appShare
		// Without the chrono counters: idle samples, mostly with an
		// empty socket (a full buffer is idle too, and not the CPU).
		appSamples := !v.limitedOK && v.idleShare >= appShare && v.fullShare < appShare && !v.sendQPlateau
		// Over loopback the sender's congestion window holds what the
		// receiver has not taken in: a busy sender whose receiver had
		// CPU to spare and did not hold the window most of the time (the
		// loopback reading of a window that binds, see rwndBinds) was
		// the one working, if something held it below a core per stream
		// (heldBelow). A starved sender saw 10% window-limited time.
		localSpare := v.local && sc.heldBelow() && rok && rc.spare() && v.limitedOK && v.limited.Rwnd < limitedShare && !slowReading(v)
		if appTime || appSamples || localSpare {
			return cpuFinding(v, run, sc, rc, rok, senderAgrees(v)), true
		}
	}
	if !rok || !rc.saturated() {
		return model.Finding{}, false
	}
	var why []model.Evidence
	unread := (v.recvQOK && v.medianRecvQ >= minUnread) || v.zeroWindows >= minZeroWindows
	switch {
	case v.sndKernel && slowReading(v), !v.sndKernel && slowReadingReceiver(v):
		why = slowReaderAgrees(v)
	case v.sndKernel && rwndBinds(v) && unread:
		why = slowReaderAgrees(v)
	case v.local && rc.heldBelow() && v.sndKernel && sok && sc.spare() && v.limitedOK && v.limited.App < appShare:
		// Over loopback no path lies between the ends: a sender with
		// CPU to spare that had data most of the time (held by its
		// congestion window, the receiver's window or its buffer: 50%,
		// 18% and 5% in one starved run) waited for the receiver to
		// take it in; what the congestion window holds waits in the
		// receiver's backlog, and what is lost there overflowed it (a
		// starved receiver, throttled while it holds its socket, lost
		// 0.04%).
		why = []model.Evidence{limitedEvidence(v)}
		if v.lossOK {
			why = append(why, lossEvidence(v))
		}
	default:
		return model.Finding{}, false
	}
	return cpuFinding(v, run, rc, sc, sok, why), true
}

// senderAgrees is the sending kernel's account of an idle sender.
func senderAgrees(v *view) []model.Evidence {
	out := []model.Evidence{}
	if v.limitedOK {
		out = append(out, limitedEvidence(v))
	}
	if v.idleSamples > 0 || !v.limitedOK {
		out = append(out, model.Evidence{What: "samples with nothing unsent while both windows had room", Value: pct(v.idleShare), Source: v.source(model.Sender)})
	}
	return out
}

// slowReaderAgrees is the kernels' account of a receiver that did not
// keep up.
func slowReaderAgrees(v *view) []model.Evidence {
	var out []model.Evidence
	if v.recvQOK {
		out = append(out, model.Evidence{What: "bytes received and not yet read by the application (median)", Value: v.medianRecvQ.Binary(), Source: v.source(model.Receiver)})
	}
	if v.windowOK {
		out = append(out, model.Evidence{What: "receiver's advertised window, median and largest", Value: fmt.Sprintf("%s, %s", v.medianWindow.Binary(), v.peerWindow.Binary()), Source: v.source(model.Sender)})
	} else if v.rcvWndOK {
		out = append(out, model.Evidence{What: "receiver's advertised window, median and largest", Value: fmt.Sprintf("%s, %s", v.rcvWndMedian.Binary(), v.rcvWndMax.Binary()), Source: v.source(model.Receiver)})
	}
	if v.zeroWindows > 0 {
		out = append(out, model.Evidence{What: "samples with a closed window (under two segments)", Value: fmt.Sprintf("%d of %d", v.zeroWindows, v.samples), Source: v.source(model.Sender)})
	}
	if v.limitedOK {
		out = append(out, limitedEvidence(v))
	}
	return out
}

// cpuText is an end's CPU use in words: "19.9% of one core (user 0.8%,
// system 19.1%), median over 4 intervals".
func cpuText(c endCPU) string {
	s := fmt.Sprintf("%.1f%% of one core (user %.1f%%, system %.1f%%)", 100*c.used, c.usedAt.User, c.usedAt.System)
	if c.perInterval {
		s += fmt.Sprintf(", median over %d measured intervals", c.n)
	} else {
		s += ", over its whole test"
	}
	if c.throttledOK {
		s += fmt.Sprintf("; its cgroup's quota throttled it in %s of its periods", pct(c.throttled))
	}
	return s
}

// mayText says what an end may use, the bound that holds first.
func mayText(c endCPU) string {
	parts := []string{fmt.Sprintf("%d stream%s, one goroutine each: about %d core%s", c.streams, plural(c.streams), c.streams, plural(c.streams))}
	if n, ok := c.cpus.Get(); ok {
		parts = append(parts, fmt.Sprintf("%d CPU%s", n, plural(n)))
	} else {
		parts = append(parts, "its CPUs: not reported")
	}
	if q, ok := c.quota.Get(); ok {
		parts = append(parts, fmt.Sprintf("a cgroup quota of %.2f cores", q))
	}
	return fmt.Sprintf("%.2f cores: the least of %s", c.may, strings.Join(parts, ", "))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// endName names an end for people: "the server's process (receiver)".
func endName(c endCPU) string {
	who := "this client's"
	if c.side == model.ServerSide {
		who = "the server's"
	}
	return fmt.Sprintf("%s process (%s)", who, c.role)
}

// cpuFinding names the CPU-bound end c, with the other end's use (o,
// when oOK) beside it and the kernel's agreement.
func cpuFinding(v *view, run *model.Run, c, o endCPU, oOK bool, kernel []model.Evidence) model.Finding {
	f := model.Finding{ID: "cpu-bound", Layer: model.LayerHost, Severity: model.Critical, Confidence: model.High}
	if !c.perInterval || (!v.limitedOK && c.role == model.Sender) {
		f.Confidence = model.Medium // a whole test's average, or the kernel's snapshots only
	}
	where := v.senderName()
	agree := "its kernel had nothing to send most of the time: the application could not write faster"
	if c.role == model.Sender && !(v.limitedOK && v.limited.App >= appShare) && !(!v.limitedOK && v.idleShare >= appShare) {
		agree = "the receiver, with CPU to spare, held its window only briefly: over loopback nothing else holds a sender"
	}
	if c.role == model.Receiver {
		where = v.receiverName()
		agree = "its unread data held the sender's window: the application could not read faster"
		if v.local && !slowReading(v) && !rwndBinds(v) {
			agree = fmt.Sprintf("the sender, with CPU to spare, had data to send %s of the time: over loopback it waited for the receiver to take it in", pct(1-v.limited.App))
		}
	}
	held := map[string]string{
		boundQuota:   fmt.Sprintf("against the %.2f cores its cgroup allows", c.may),
		boundCPUs:    fmt.Sprintf("all of its %.0f CPUs", c.may),
		boundStreams: fmt.Sprintf("a core per stream (%d stream%s, one goroutine each)", c.streams, plural(c.streams)),
	}[c.bound]
	if c.bound == boundQuota && c.throttledOK {
		held += fmt.Sprintf(", which throttled it in %s of its periods", pct(c.throttled))
	}
	f.Summary = fmt.Sprintf("The %s's CPU is the bottleneck: %s used %.0f%% of one core, %s, and %s; the transfer got %s.",
		c.role, endName(c), 100*c.used, held, agree, rate(v.goodput))
	f.Explanation = "A tcpscope end serves each stream with one goroutine, which runs on one core at a time: a stream's work (its copies through write and read and most of the kernel's TCP work for it) is bounded by about one core, while the process as a whole can use more than 100% on several. " +
		"An end that used all the CPU it may (a core per stream, all its CPUs, or its cgroup's quota) while its kernel shows it could not keep up (a sender with nothing queued, a receiver whose unread data closed the window) is the bottleneck: the network waited for it. " +
		"The CPU is the process's: a server running several tests counts them all, and other programs' load shows as less CPU for this end, not more."
	f.Evidence = []model.Evidence{
		goodputEvidence(v),
		{What: fmt.Sprintf("%s CPU use, user+system", endName(c)), Value: cpuText(c), Source: string(c.side)},
		{What: fmt.Sprintf("CPU %s may use", endName(c)), Value: mayText(c), Source: string(c.side)},
	}
	if oOK {
		f.Evidence = append(f.Evidence, model.Evidence{What: fmt.Sprintf("%s CPU use, of %.2f cores it may use", endName(o), o.may), Value: cpuText(o), Source: string(o.side)})
	}
	f.Evidence = append(f.Evidence, kernel...)
	f.Evidence = append(f.Evidence, rttEvidence(v))

	var fixes []model.Fix
	predicted := model.Opt[model.Bitrate]{}
	switch c.bound {
	case boundQuota:
		more := float64(c.streams)
		if n, ok := c.cpus.Get(); ok {
			more = min(more, float64(n))
		}
		fixes = append(fixes, model.Fix{Where: where, Kind: "cgroup", Command: fmt.Sprintf(
			"give it more CPU: its cgroup allows %.2f cores (cpu.max or cpu.cfs_quota_us; systemd CPUQuota=, docker --cpus): raise the quota to %.0f core%s or run it outside that cgroup", c.may, more, plural(int(more)))})
		if v.receivedOK && c.used > 0 {
			predicted = model.Some(scaled(v.goodput, more/c.used, o, oOK))
			f.Effect = fmt.Sprintf("the rate follows the CPU it may use: at %.0f core%s up to about %s (as far as the other end's CPU goes), unless the path or another limit binds first", more, plural(int(more)), rate(predicted.V))
		}
	case boundStreams:
		// More streams than the end has them spread the work, up to its
		// CPUs (and its quota's whole cores), at most twice as many.
		p := 2 * c.streams
		if n, ok := c.cpus.Get(); ok {
			p = min(p, n)
		}
		if q, ok := c.quota.Get(); ok {
			p = min(p, int(math.Floor(q)))
		}
		if p <= c.streams {
			f.Effect = "a core per stream was busy and no idle core is left for another stream: only less work per byte (or a faster host) raises the rate"
			break
		}
		fixes = append(fixes, model.Fix{Where: "application", Kind: "tcpscope", Command: fmt.Sprintf("tcpscope test -P %d: spreads the work over %d cores (one goroutine per stream)", p, p)})
		if v.receivedOK {
			predicted = model.Some(scaled(v.goodput, float64(p)/float64(c.streams), o, oOK))
			f.Effect = fmt.Sprintf("with -P %d up to about %s, if those cores are free and the path carries it", p, rate(predicted.V))
		}
	default:
		f.Effect = "every CPU the end may use was busy: only less work per byte (or a faster host) raises the rate"
	}
	// Over loopback the kernel copies a sendfile'd page into the
	// receiving socket anyway: -Z measured 0.20 CPU-s per GB sent
	// against 0.18 for write(2) there (docs/BENCHMARKS.md), so it is
	// advised only where a network interface takes the pages.
	if c.role == model.Sender && !run.Config.ZeroCopy && !v.local {
		fixes = append(fixes, model.Fix{Where: "application", Kind: "tcpscope", Command: "tcpscope test -Z: the sender hands the kernel its block with sendfile(2) instead of copying it"})
	}
	if l := run.Config.Length; l > 0 && l < model.MiB {
		fixes = append(fixes, model.Fix{Where: "application", Kind: "tcpscope", Command: fmt.Sprintf("larger writes and reads than %s (tcpscope test -l 1M): fewer system calls per byte", l.Binary())})
	}
	fixes = append(fixes, model.Fix{Where: where, Kind: "host", Command: "check what else runs there (top, mpstat -P ALL 1): other load takes the CPU this end needs"})
	f.Fix = fixes
	f.Predicted = predicted
	if f.Effect == "" {
		f.Effect = "the rate rises with the CPU this end gets, until the path or another limit binds"
	}
	return f
}

// scaled is goodput raised by factor, the CPU the bound end gains, and
// no further than the other end's spare CPU carries it (its use scales
// with the rate too): a prediction "up to".
func scaled(goodput model.Bitrate, factor float64, o endCPU, oOK bool) model.Bitrate {
	if oOK && o.used > 0 {
		factor = min(factor, o.may/o.used)
	}
	return model.Bitrate(float64(goodput) * factor)
}
