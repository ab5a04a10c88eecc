package diagnose

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpmath"
)

// HostOptions say what the host should be able to do.
type HostOptions struct {
	// Target and RTT: one stream should reach Target over a path of RTT.
	// Zero Target: the fastest interface's speed; zero RTT: AssumedRTT.
	// Findings say when they rest on an assumption.
	Target model.Bitrate
	RTT    time.Duration
	// Measured is the fastest rate a test measured over the path
	// (tcpscope diagnose); 0: none. Without a Target, buffers are judged
	// oversized against it rather than the interface's speed: a 10 Mbit/s
	// path behind a 10 Gbit/s interface needs a 10 Mbit/s buffer.
	Measured model.Bitrate
}

// AssumedRTT is the round trip the audit sizes buffers for when none is
// given: a path across a continent.
const AssumedRTT = 50 * time.Millisecond

// Host thresholds; docs/DIAGNOSES.md explains each.
const (
	// oversize: buffer maxima this many times the need (2 × BDP) on a
	// link slower than slowLink waste memory and let a host queue.
	oversize = 16
	slowLink = 100 * model.MbitPerSecond
	// minTxQueue: below this on a ≥ 1 Gbit/s interface bursts drop in
	// the host's own queue.
	minTxQueue = 1000
)

// Host audits a host's configuration: findings ordered by severity, each
// with the sysctl or command that fixes it.
func Host(info model.HostInfo, o HostOptions) []model.Finding {
	a := &audit{info: info, o: o, explicit: o.Target > 0}
	a.sizeFor()
	// The order is the order of findings of one severity.
	for _, rule := range []func(){
		a.buffers, a.coreMax, a.off("net.ipv4.tcp_moderate_rcvbuf"), a.oversized,
		a.off("net.ipv4.tcp_window_scaling"), a.off("net.ipv4.tcp_sack"), a.off("net.ipv4.tcp_timestamps"),
		a.congestion, a.interfaces, a.off("net.ipv4.tcp_mtu_probing"), a.off("net.ipv4.tcp_no_metrics_save"),
	} {
		rule()
	}
	slices.SortStableFunc(a.out, func(x, y model.Finding) int { return x.Severity.Rank() - y.Severity.Rank() })
	return a.out
}

type audit struct {
	info     model.HostInfo
	o        HostOptions
	explicit bool     // the target was given, not taken from an interface
	assumed  []string // what the sizing assumed, for the evidence
	need     model.Bytes
	out      []model.Finding
}

func (a *audit) sysctl(k string) (string, bool) {
	v, ok := a.info.Sysctls[k]
	return v, ok
}

// triple reads the max of a "min default max" sysctl.
func (a *audit) tripleMax(k string) (model.Bytes, bool) {
	v, ok := a.sysctl(k)
	if !ok {
		return 0, false
	}
	f := strings.Fields(v)
	if len(f) != 3 {
		return 0, false
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	return model.Bytes(n), err == nil
}

func (a *audit) number(k string) (int64, bool) {
	v, ok := a.sysctl(k)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

// sizeFor settles the target and RTT and the buffer they need.
func (a *audit) sizeFor() {
	if a.o.Target == 0 {
		for _, in := range a.info.Interfaces {
			if !in.Loopback && in.Up && in.Speed.OK && in.Speed.V > a.o.Target {
				a.o.Target = in.Speed.V
			}
		}
		if a.o.Target > 0 {
			a.assumed = append(a.assumed, fmt.Sprintf("target %s, the fastest interface (--target-rate)", a.o.Target))
		}
	}
	// A measured RTT comes to the nanosecond; people read 10 µs.
	a.o.RTT = a.o.RTT.Round(10 * time.Microsecond)
	if a.o.RTT == 0 {
		a.o.RTT = AssumedRTT
		a.assumed = append(a.assumed, fmt.Sprintf("RTT %v (--rtt)", AssumedRTT))
	}
	if a.o.Target > 0 {
		a.need = model.SockBufFor(tcpmath.BDP(a.o.Target, a.o.RTT))
	}
}

func (a *audit) confidence() model.Confidence {
	if len(a.assumed) > 0 {
		return model.Medium
	}
	return model.High
}

func (a *audit) sizing() model.Evidence {
	ev := model.Evidence{What: "sized for", Value: fmt.Sprintf("%s over %v: BDP %s, buffer 2 × BDP = %s",
		a.o.Target, a.o.RTT.Round(10*time.Microsecond), tcpmath.BDP(a.o.Target, a.o.RTT).Decimal(), a.need.Decimal())}
	if len(a.assumed) > 0 {
		ev.Source = "assumed: " + strings.Join(a.assumed, "; ")
	}
	return ev
}

func (a *audit) add(f model.Finding) { a.out = append(a.out, f) }

// buffers: the autotuning maxima must hold twice the target's BDP.
// Without a target it says what they allow.
func (a *audit) buffers() {
	if a.need == 0 {
		a.bufferReach()
		return
	}
	for _, b := range []struct {
		key, who string
		linux    model.BufferBounds
	}{
		{"net.ipv4.tcp_rmem", "receive", model.LinuxRmem},
		{"net.ipv4.tcp_wmem", "send", model.LinuxWmem},
	} {
		mx, ok := a.tripleMax(b.key)
		if !ok || mx >= a.need {
			continue
		}
		v, _ := a.sysctl(b.key)
		f := model.Finding{ID: "host-" + strings.TrimPrefix(b.key, "net.ipv4.tcp_") + "-small", Layer: model.LayerHost,
			Severity: model.Critical, Confidence: a.confidence()}
		f.Summary = fmt.Sprintf("The %s buffer can grow to %s, which carries at most %s over %v; %s needs %s.",
			b.who, mx.Binary(), tcpmath.WindowRate(model.SockBufData(mx), a.o.RTT), a.o.RTT, a.o.Target, a.need.Decimal())
		f.Explanation = "Autotuning grows each socket's buffer up to the third number of " + b.key + ", and about half of a buffer becomes window. A window smaller than the bandwidth-delay product caps the rate at window/RTT."
		f.Evidence = []model.Evidence{{What: b.key, Value: v, Source: "sysctl"}, a.sizing()}
		f.Fix = []model.Fix{{Where: "this host", Kind: "sysctl", Command: fmt.Sprintf("sysctl -w %s=\"%s\"", b.key, keepBounds(v, b.linux).WithMax(a.need))}}
		f.Effect = fmt.Sprintf("the %s window bound rises from %s to %s", b.who, tcpmath.WindowRate(model.SockBufData(mx), a.o.RTT), a.o.Target)
		f.Predicted = model.Some(a.o.Target)
		a.add(f)
	}
}

// bufferReach: with no target, what one stream's buffers allow.
func (a *audit) bufferReach() {
	rmax, ok1 := a.tripleMax("net.ipv4.tcp_rmem")
	wmax, ok2 := a.tripleMax("net.ipv4.tcp_wmem")
	if !ok1 || !ok2 {
		return
	}
	w := model.SockBufData(min(rmax, wmax))
	a.add(model.Finding{ID: "host-buffer-reach", Layer: model.LayerHost, Severity: model.Info, Confidence: model.Medium,
		Summary: fmt.Sprintf("No target given: with these buffers one stream reaches at most %s over %v, %s over 20 ms, %s over 150 ms.",
			tcpmath.WindowRate(w, a.o.RTT), a.o.RTT.Round(10*time.Microsecond), tcpmath.WindowRate(w, 20*time.Millisecond), tcpmath.WindowRate(w, 150*time.Millisecond)),
		Explanation: "About half of a socket buffer becomes window, and a window carries at most window/RTT. Give --target-rate (and --rtt) to check the buffers against your path.",
		Evidence: []model.Evidence{{What: "net.ipv4.tcp_rmem max, tcp_wmem max", Value: rmax.Binary() + ", " + wmax.Binary(), Source: "sysctl"},
			{What: "interface speeds", Value: "none reported (virtual interfaces report none)"}},
	})
}

// coreMax: SO_RCVBUF/SO_SNDBUF requests are capped at net.core.*mem_max.
func (a *audit) coreMax() {
	if a.need == 0 {
		return
	}
	for _, k := range []string{"net.core.rmem_max", "net.core.wmem_max"} {
		n, ok := a.number(k)
		if !ok || model.Bytes(n) >= a.need {
			continue
		}
		f := model.Finding{ID: "host-" + strings.TrimPrefix(k, "net.core.") + "-small", Layer: model.LayerHost,
			Severity: model.Warning, Confidence: a.confidence()}
		f.Summary = fmt.Sprintf("Applications that set their own buffer (iperf -w, SO_RCVBUF/SO_SNDBUF) are capped at %s by %s, less than the %s needed.",
			model.Bytes(n).Binary(), k, a.need.Decimal())
		f.Explanation = "A fixed socket buffer turns autotuning off for that socket and is clamped at this maximum without an error; the kernel then doubles the clamped value."
		f.Evidence = []model.Evidence{{What: k, Value: strconv.FormatInt(n, 10), Source: "sysctl"}, a.sizing()}
		f.Fix = []model.Fix{{Where: "this host", Kind: "sysctl", Command: fmt.Sprintf("sysctl -w %s=%d", k, a.need)}}
		a.add(f)
	}
}

// oversized: the seeds' advice (document 002) is not to raise buffers far
// beyond need on slow links.
func (a *audit) oversized() {
	rate, need, sizing, conf := a.o.Target, a.need, a.sizing(), a.confidence()
	if !a.explicit && a.o.Measured > 0 {
		// What a test measured over the path is what it can use.
		rate, need = a.o.Measured, model.SockBufFor(tcpmath.BDP(a.o.Measured, a.o.RTT))
		sizing = model.Evidence{What: "sized for", Value: fmt.Sprintf("the %s measured over %v: BDP %s, buffer 2 × BDP = %s",
			rate, a.o.RTT.Round(10*time.Microsecond), tcpmath.BDP(rate, a.o.RTT).Decimal(), need.Decimal()), Source: "the tests"}
		conf = model.High
	}
	if need == 0 || rate >= slowLink {
		return
	}
	mx, ok := a.tripleMax("net.ipv4.tcp_rmem")
	if !ok || mx < oversize*need {
		return
	}
	v, _ := a.sysctl("net.ipv4.tcp_rmem")
	a.add(model.Finding{ID: "host-buffers-oversized", Layer: model.LayerHost, Severity: model.Info, Confidence: conf,
		Summary: fmt.Sprintf("Buffers may grow to %s where %s at %v needs %s: %.0f× more than the path can use.",
			mx.Binary(), rate, a.o.RTT, need.Decimal(), float64(mx)/float64(need)),
		Explanation: "On a slow link a huge buffer gains nothing: the window beyond the BDP only queues in the bottleneck (bufferbloat) and ties up memory per connection.",
		Evidence:    []model.Evidence{{What: "net.ipv4.tcp_rmem", Value: v, Source: "sysctl"}, sizing},
		Fix:         []model.Fix{{Where: "this host", Kind: "sysctl", Command: fmt.Sprintf("sysctl -w net.ipv4.tcp_rmem=\"%s\"", keepBounds(v, model.LinuxRmem).WithMax(max(need, 6*model.MiB)))}},
	})
}

// keepBounds is the minimum and default a buffer fix keeps: the host's
// own, from its tcp_rmem or tcp_wmem text v ("4096 131072 6291456"),
// else Linux's.
func keepBounds(v string, linux model.BufferBounds) model.BufferBounds {
	parts := strings.Fields(v)
	if len(parts) != 3 {
		return linux
	}
	lo, err1 := strconv.ParseInt(parts[0], 10, 64)
	def, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || lo < 0 || def < lo {
		return linux
	}
	return model.BufferBounds{Min: model.Bytes(lo), Default: model.Bytes(def)}
}

func (a *audit) congestion() {
	cc, ok := a.sysctl("net.ipv4.tcp_congestion_control")
	if !ok || cc == "cubic" || cc == "bbr" || cc == "bbr3" {
		return
	}
	avail, _ := a.sysctl("net.ipv4.tcp_available_congestion_control")
	better := "cubic"
	if slices.Contains(strings.Fields(avail), "bbr") {
		better = "bbr"
	}
	f := model.Finding{ID: "host-congestion-control", Layer: model.LayerHost, Severity: model.Warning, Confidence: model.High,
		Summary:     fmt.Sprintf("The default congestion control is %s, which grows its window by one segment per round trip after a loss: minutes to refill a long fat path.", cc),
		Explanation: "Reno's linear growth needs BDP/MSS round trips to recover from one loss; CUBIC grows by elapsed time, BBR paces at the measured bottleneck rate and does not treat random loss as congestion.",
		Evidence:    []model.Evidence{{What: "net.ipv4.tcp_congestion_control", Value: cc, Source: "sysctl"}, {What: "available", Value: avail, Source: "sysctl"}},
		Fix:         []model.Fix{{Where: "this host", Kind: "sysctl", Command: "sysctl -w net.ipv4.tcp_congestion_control=" + better}},
	}
	if a.need > 0 {
		mss := model.Bytes(1448)
		rounds := float64(tcpmath.BDP(a.o.Target, a.o.RTT)) / 2 / float64(mss)
		f.Effect = fmt.Sprintf("at %s over %v reno needs %.0f round trips (%v) to regain a halved window",
			a.o.Target, a.o.RTT, rounds, time.Duration(rounds*float64(a.o.RTT)).Round(time.Second))
	}
	a.add(f)
}

// interfaces checks each interface that is up and not loopback.
func (a *audit) interfaces() {
	for _, in := range a.info.Interfaces {
		if in.Loopback || !in.Up {
			continue
		}
		for _, rule := range []func(model.Interface, string) *model.Finding{
			a.linkSlow, halfDuplex, offloadsOff, nicErrors, qdiscFIFO, mtuSmall, jumboFrames, txQueueShort,
		} {
			if f := rule(in, "interface "+in.Name); f != nil {
				a.add(*f)
			}
		}
	}
}

// linkSlow: the link negotiated below the target.
func (a *audit) linkSlow(in model.Interface, src string) *model.Finding {
	if !(in.Speed.OK && a.o.Target > 0 && in.Speed.V < a.o.Target) {
		return nil
	}
	return &model.Finding{ID: "host-link-slow", Layer: model.LayerPhysical, Severity: model.Critical, Confidence: model.High,
		Summary:     fmt.Sprintf("%s runs at %s, below the %s target.", in.Name, in.Speed.V, a.o.Target),
		Explanation: "A link negotiated below its capability (a bad cable, a forced speed, an old switch port) caps everything above it.",
		Evidence:    []model.Evidence{{What: "link speed", Value: in.Speed.V.String(), Source: src}},
		Fix:         []model.Fix{{Where: "this host", Kind: "ethtool", Command: fmt.Sprintf("ethtool %s (check the advertised and link partner modes); ethtool -s %s autoneg on", in.Name, in.Name)}},
	}
}

// halfDuplex: collisions, or a duplex mismatch.
func halfDuplex(in model.Interface, src string) *model.Finding {
	if in.Duplex != "half" {
		return nil
	}
	return &model.Finding{ID: "host-half-duplex", Layer: model.LayerPhysical, Severity: model.Critical, Confidence: model.High,
		Summary:     fmt.Sprintf("%s runs half duplex: collisions, and a duplex mismatch if the switch port is full.", in.Name),
		Explanation: "A duplex mismatch (one end auto-negotiating, the other forced) loses packets under load in a pattern that cripples TCP: the NDT tools' classic finding.",
		Evidence:    []model.Evidence{{What: "duplex", Value: "half", Source: src}},
		Fix:         []model.Fix{{Where: "this host", Kind: "ethtool", Command: fmt.Sprintf("ethtool -s %s autoneg on (and the switch port on auto too)", in.Name)}},
	}
}

// offloadsOff: segmentation or receive offloads off on a fast (or unknown) link.
func offloadsOff(in model.Interface, src string) *model.Finding {
	o, ok := in.Offloads.Get()
	if !ok || (o.TSO && o.GRO) || (in.Speed.OK && in.Speed.V < model.GbitPerSecond) {
		return nil
	}
	var off []string
	for _, x := range []struct {
		on   bool
		name string
	}{{o.TSO, "tso"}, {o.GSO, "gso"}, {o.GRO, "gro"}} {
		if !x.on {
			off = append(off, x.name)
		}
	}
	return &model.Finding{ID: "host-offloads-off", Layer: model.LayerLink, Severity: model.Warning, Confidence: model.Medium,
		Summary:     fmt.Sprintf("%s has %s off: every packet takes its own trip through the stack, which costs CPU at high rates.", in.Name, strings.Join(off, ", ")),
		Explanation: "With TSO and GSO the stack hands the NIC 64 KiB at a time; with GRO it merges received packets. Off, a 10 Gbit/s flow is over 800,000 packets a second each way through the CPU, and the CPU becomes the bottleneck.",
		Evidence:    []model.Evidence{{What: "offloads (ethtool -k)", Value: fmt.Sprintf("tso %v, gso %v, gro %v", o.TSO, o.GSO, o.GRO), Source: src}},
		Fix:         []model.Fix{{Where: "this host", Kind: "ethtool", Command: fmt.Sprintf("ethtool -K %s tso on gso on gro on", in.Name)}},
	}
}

// nicErrors: errors or drops counted since boot.
func nicErrors(in model.Interface, src string) *model.Finding {
	if in.RxErrors+in.TxErrors+in.RxCRCErrors == 0 && in.RxDropped+in.TxDropped == 0 {
		return nil
	}
	return &model.Finding{ID: "host-nic-errors", Layer: model.LayerPhysical, Severity: model.Warning, Confidence: model.Medium,
		Summary: fmt.Sprintf("%s has counted errors and drops since boot: errors %d received, %d sent, %d CRC; drops %d received, %d sent.",
			in.Name, in.RxErrors, in.TxErrors, in.RxCRCErrors, in.RxDropped, in.TxDropped),
		Explanation: "CRC errors come from the wire: a bad cable, connector or optic, or a duplex mismatch. Drops are packets the host itself discarded (a full ring or backlog). Every one is a lost packet, which a long path pays for dearly.",
		Evidence: []model.Evidence{{What: "rx_errors / tx_errors / rx_crc_errors", Value: fmt.Sprintf("%d / %d / %d", in.RxErrors, in.TxErrors, in.RxCRCErrors), Source: src},
			{What: "rx_dropped / tx_dropped", Value: fmt.Sprintf("%d / %d", in.RxDropped, in.TxDropped), Source: src},
			{What: "carrier changes", Value: fmt.Sprint(in.CarrierChanges), Source: src}},
		Fix: []model.Fix{{Where: "this host", Kind: "ethtool", Command: fmt.Sprintf("ethtool -S %s | grep -iE 'err|crc'; watch whether they grow under load; replace the cable or optic", in.Name)}},
	}
}

// qdiscFIFO: a root qdisc without fair queueing or pacing.
func qdiscFIFO(in model.Interface, src string) *model.Finding {
	if in.Qdisc != "pfifo_fast" && in.Qdisc != "pfifo" {
		return nil
	}
	return &model.Finding{ID: "host-qdisc-fifo", Layer: model.LayerLink, Severity: model.Info, Confidence: model.Medium,
		Summary:     fmt.Sprintf("%s sends through a plain FIFO (%s): no fair queueing, no pacing help, no queue management.", in.Name, in.Qdisc),
		Explanation: "fq paces each TCP flow at its rate (SO_MAX_PACING_RATE, BBR) and keeps flows from delaying each other; fq_codel also keeps the queue short. Where this host's link is the bottleneck (an uplink), a FIFO is where bufferbloat lives.",
		Evidence:    []model.Evidence{{What: "root qdisc", Value: in.Qdisc, Source: src}},
		Fix: []model.Fix{{Where: "this host", Kind: "tc", Command: fmt.Sprintf("tc qdisc replace dev %s root fq", in.Name)},
			{Where: "this host", Kind: "sysctl", Command: "sysctl -w net.core.default_qdisc=fq"}},
	}
}

// mtuSmall: an MTU below Ethernet's.
func mtuSmall(in model.Interface, src string) *model.Finding {
	if in.MTU <= 0 || in.MTU >= 1500 {
		return nil
	}
	return &model.Finding{ID: "host-mtu-small", Layer: model.LayerLink, Severity: model.Info, Confidence: model.High,
		Summary:     fmt.Sprintf("%s has an MTU of %d, below Ethernet's 1500: every segment carries %d fewer bytes.", in.Name, in.MTU, 1500-in.MTU),
		Explanation: "A tunnel or overlay underneath needs it; otherwise it costs per-packet overhead and lowers the loss bound in proportion.",
		Evidence:    []model.Evidence{{What: "MTU", Value: strconv.Itoa(in.MTU), Source: src}},
		Fix:         []model.Fix{{Where: "this host", Kind: "ip", Command: fmt.Sprintf("ip link set dev %s mtu 1500 (only if the network carries it)", in.Name)}},
	}
}

// jumboFrames: 1500-byte frames at 10 Gbit/s and more.
func jumboFrames(in model.Interface, src string) *model.Finding {
	if !(in.Speed.OK && in.Speed.V >= 10*model.GbitPerSecond && in.MTU == 1500) {
		return nil
	}
	return &model.Finding{ID: "host-jumbo-frames", Layer: model.LayerLink, Severity: model.Info, Confidence: model.Low,
		Summary:     fmt.Sprintf("%s runs at %s with 1500-byte frames: %s packets/s at line rate.", in.Name, in.Speed.V, model.GroupDigits(tcpmath.PacketsPerSecond(in.Speed.V, 1500))),
		Explanation: "Jumbo frames cut the packet rate six-fold and raise the loss bound linearly, if every hop carries them.",
		Evidence:    []model.Evidence{{What: "MTU", Value: "1500", Source: src}},
		Fix:         []model.Fix{{Where: "this host", Kind: "ip", Command: fmt.Sprintf("ip link set dev %s mtu 9000 (and every hop of the path)", in.Name)}},
	}
}

// txQueueShort: a transmit queue too short for a fast link.
func txQueueShort(in model.Interface, src string) *model.Finding {
	if !(in.Speed.OK && in.Speed.V >= model.GbitPerSecond && in.TxQueueLen > 0 && in.TxQueueLen < minTxQueue) {
		return nil
	}
	return &model.Finding{ID: "host-txqueuelen-short", Layer: model.LayerLink, Severity: model.Warning, Confidence: model.Medium,
		Summary:     fmt.Sprintf("%s's transmit queue holds %d packets, short for %s: bursts drop in this host.", in.Name, in.TxQueueLen, in.Speed.V),
		Explanation: "A local drop is reported to TCP as congestion and halves a loss-based sender's window, though no network is involved.",
		Evidence:    []model.Evidence{{What: "txqueuelen", Value: strconv.Itoa(in.TxQueueLen), Source: src}},
		Fix:         []model.Fix{{Where: "this host", Kind: "ip", Command: fmt.Sprintf("ip link set dev %s txqueuelen %d", in.Name, minTxQueue)}},
	}
}

// switchedOff is a host rule that differs from the others only in its
// sysctl: a feature Linux turns on by default (1), turned off here (0),
// whose fix is turning it back on.
type switchedOff struct {
	key, id     string
	sev         model.Severity
	conf        model.Confidence
	summary     string
	explanation string
	// sized: the rule matters only when buffers are sized for a target.
	sized bool
}

// rfcOptions is why the handshake's options matter at one end.
const rfcOptions = "RFC 7323 and RFC 2018 options are negotiated in the handshake; one end turning them off turns them off for the connection."

// switchesOff are the switchedOff rules. The metrics rule is Tierney's
// advice: don't let one lossy connection's ssthresh start the next one
// low.
func switchesOff() []switchedOff {
	return []switchedOff{
		{key: "net.ipv4.tcp_moderate_rcvbuf", id: "host-autotuning-off", sev: model.Warning, conf: model.High,
			summary:     "Receive buffer autotuning is off: every connection keeps the default receive buffer.",
			explanation: "With net.ipv4.tcp_moderate_rcvbuf=0 the receive buffer stays at tcp_rmem's default instead of growing with the connection's rate and RTT."},
		{key: "net.ipv4.tcp_window_scaling", id: "host-wscale-off", sev: model.Critical, conf: model.High,
			summary: "Window scaling is off: no connection's window can exceed 64 KiB, whatever the buffers.", explanation: rfcOptions},
		{key: "net.ipv4.tcp_sack", id: "host-sack-off", sev: model.Warning, conf: model.High,
			summary: "SACK is off: a window with several losses takes a round trip per loss, or a timeout.", explanation: rfcOptions},
		{key: "net.ipv4.tcp_timestamps", id: "host-timestamps-off", sev: model.Info, conf: model.High,
			summary: "TCP timestamps are off: fewer RTT samples, and no protection against wrapped sequence numbers on fast paths.", explanation: rfcOptions},
		{key: "net.ipv4.tcp_mtu_probing", id: "host-mtu-probing-off", sev: model.Info, conf: model.High,
			summary:     "Path-MTU probing is off: a connection across a path-MTU black hole stalls instead of finding a working size.",
			explanation: "With tcp_mtu_probing=1 TCP lowers its segment size after timeouts that look like a black hole (filtered ICMP \"fragmentation needed\")."},
		{key: "net.ipv4.tcp_no_metrics_save", id: "host-metrics-save", sev: model.Info, conf: model.Low, sized: true,
			summary:     "TCP caches each destination's ssthresh: after one lossy transfer the next to that host starts in congestion avoidance.",
			explanation: "Tuning guides for long fat paths set tcp_no_metrics_save=1 so that every test starts in slow start; for repeated measurements this keeps runs independent."},
	}
}

// off is the switchedOff rule of the sysctl key.
func (a *audit) off(key string) func() {
	i := slices.IndexFunc(switchesOff(), func(x switchedOff) bool { return x.key == key })
	x := switchesOff()[i] // a key not in the table is a programming error: it panics in every test
	return func() {
		if n, ok := a.number(x.key); !ok || n != 0 || (x.sized && a.need == 0) {
			return
		}
		a.add(model.Finding{ID: x.id, Layer: model.LayerHost, Severity: x.sev, Confidence: x.conf, Summary: x.summary,
			Explanation: x.explanation,
			Evidence:    []model.Evidence{{What: x.key, Value: "0", Source: "sysctl"}},
			Fix:         []model.Fix{{Where: "this host", Kind: "sysctl", Command: "sysctl -w " + x.key + "=1"}},
		})
	}
}

// SysctlConf gathers the findings' sysctl fixes into a sysctl.conf
// snippet, one "key = value" line each, commented with the finding.
func SysctlConf(findings []model.Finding) string {
	var b strings.Builder
	b.WriteString("# written by tcpscope host; review, then: sysctl -p FILE\n")
	seen := map[string]bool{}
	for _, f := range findings {
		for _, x := range f.Fix {
			if x.Kind != "sysctl" {
				continue
			}
			kv, ok := strings.CutPrefix(x.Command, "sysctl -w ")
			if !ok {
				continue
			}
			kv, _, _ = strings.Cut(kv, " (")
			k, v, ok := strings.Cut(kv, "=")
			if !ok || seen[k] {
				continue
			}
			seen[k] = true
			fmt.Fprintf(&b, "# %s\n%s = %s\n", f.ID, k, strings.Trim(v, "\""))
		}
	}
	return b.String()
}

// Path turns what the probe learned into findings.
func Path(f model.PathFacts) []model.Finding {
	var out []model.Finding
	if f.PMTU > 0 && f.PMTU < 1500 {
		out = append(out, model.Finding{ID: "path-mtu-small", Layer: model.LayerLink, Severity: model.Info, Confidence: model.High,
			Summary: fmt.Sprintf("The path MTU toward %s is %d bytes, below Ethernet's 1500: a tunnel, a VPN or a lowered interface MTU on the way.", f.Addr, f.PMTU),
			Explanation: "Every segment carries the MTU less 40 to 52 bytes of headers, so per-packet costs rise and the loss bound falls in proportion. " +
				"It also shows path-MTU discovery working: a path that loses large packets without telling gives a stalled test instead.",
			Evidence: []model.Evidence{{What: "path MTU (IP_MTU)", Value: fmt.Sprint(f.PMTU), Source: "probe"},
				{What: "MSS agreed in the handshake", Value: fmt.Sprint(f.MSS), Source: "probe"}},
			Fix: []model.Fix{{Where: "path", Kind: "ip", Command: "ip route get ADDR and ip link show: find the link with the smaller MTU"}},
		})
	}
	return out
}

// layerRank is the seeds' method, from the bottom up.
func layerRank(l model.Layer) int {
	return slices.Index([]model.Layer{model.LayerHost, model.LayerPhysical, model.LayerLink,
		model.LayerNetwork, model.LayerTransport, model.LayerApplication}, l)
}

// Merge drops repeats: a finding that is not primary and has the same ID
// as an earlier one (the same option off in both directions, say) is
// kept once, its direction cleared when the repeats differ in it.
func Merge(fs []model.Finding) []model.Finding {
	var out []model.Finding
	at := map[string]int{}
	for _, f := range fs {
		if i, ok := at[f.ID]; ok && !f.Primary && !out[i].Primary {
			if out[i].Direction != f.Direction {
				out[i].Direction = ""
			}
			continue
		}
		if !f.Primary {
			at[f.ID] = len(out)
		}
		out = append(out, f)
	}
	return out
}

// ByLayer orders findings as the layered method walks them, from the host
// and the wire up to the application, worst first within a layer.
func ByLayer(fs []model.Finding) []model.Finding {
	out := slices.Clone(fs)
	slices.SortStableFunc(out, func(a, b model.Finding) int {
		if d := layerRank(a.Layer) - layerRank(b.Layer); d != 0 {
			return d
		}
		return a.Severity.Rank() - b.Severity.Rank()
	})
	return out
}
