package interop

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// RateTolerance is how far the two ends' rates of one flow may differ.
const RateTolerance = 0.02

// bidirRateTolerance is RateTolerance where tcpscope's client runs
// --bidir at full speed against a stock server. The client waits up to
// 1% of the test for the server to read what it wrote before it sends
// TEST_END, and the server's one thread, busy sending up to ten blocks
// for each it reads, hears TEST_END milliseconds late: its time for what
// it received runs on through both, and ended up to 1.6% past the
// client's in 10 runs on a quiet 2-core machine (docs/INTEROP.md).
const bidirRateTolerance = 0.03

// shortRateTolerance is RateTolerance for byte and block budgets sent
// unpaced, which last tens of milliseconds on loopback: there the ends'
// clocks differ by what a round of the control connection and a
// scheduler's wake-up take, a few per cent of the test. Stock against
// stock the rates came up to 5.5% apart (issue 24's runs); tcpscope
// is held to the same.
const shortRateTolerance = 0.06

// blockReadTolerance is how far a -k -R budget may fall from stock's:
// the client counts reads, not blocks (see Check), and a read that wakes
// before the rest of a block has arrived takes part of one. Whether it
// does is a race between the client's wake-up and the sender's copy: at
// -k 100 -b 100M on a 2-core machine stock's server sent 98-100% of
// the blocks in 20 runs, tcpscope's 92-100%, and 88% in a loaded CI
// run. Writes of less than a block, the defect this guards, sent 9%.
const blockReadTolerance = 0.20

// Served says whether a case runs a way, and if not, why.
func (c Case) Served(w Way) (bool, string) {
	if why, ok := c.NotServed[w]; ok {
		return false, why
	}
	if c.Clients > 1 && w != StockToTcpscope {
		return false, "stock iperf3 serves one test at a time"
	}
	return true, ""
}

// Check is what a user relies on, for one client's run: it exited 0
// with no error, every flow's byte counts agree exactly between the
// ends (UDP: every datagram sent is accounted for at the receiver),
// their rates within RateTolerance, a byte budget (-n) filled exactly,
// and a concurrent client's receiver saw its own rate (not another
// client's). ref is the reference's run of the same case (nil if none);
// a block budget (-k) is held to it. It returns what failed.
func Check(c Case, r Result, ref *Result) []string {
	var bad []string
	fail := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	if r.Harness != nil {
		return []string{"harness: " + r.Harness.Error()}
	}
	if r.Exit != 0 || r.Error != "" {
		fail("exit %d: %s", r.Exit, firstLine(r.Error, r.Stderr))
		return bad
	}
	want := 1
	if hasFlag(c.Args, "--bidir") {
		want = 2
	}
	if len(r.Flows) != want {
		fail("%d flows in the document, want %d", len(r.Flows), want)
		return bad
	}
	budget := sizeFlag(c.Args, "-n")
	for _, f := range r.Flows {
		// With --bidir a stock server reads and sends in one thread:
		// tcpscope's client waits for it to read what was written only
		// as long as the two ends' clocks allow, 1% of the test, and a
		// server busy sending may not have read it all by then; that
		// falls to the buffer bound below.
		exact := exactWay(r.Way, f.Reverse) && !(r.Way == TcpscopeToStock && hasFlag(c.Args, "--bidir"))
		dir := "client→server"
		if f.Reverse {
			dir = "server→client"
		}
		if f.SentBytes <= 0 {
			fail("%s: nothing sent", dir)
			continue
		}
		switch {
		case hasFlag(c.Args, "-O"):
			// Each end counts from its own omit mark, on its own clock:
			// the counts differ by what crossed between the two marks,
			// for stock as for tcpscope. The rates must still agree.
		case c.UDP() && stockReceives(r.Way, f.Reverse):
			// A stock receiver counts to its TEST_END: a datagram still
			// queued for it then is neither received nor lost in its
			// account (stock against stock too: 499 of 500). At most
			// what its socket buffer holds, and never over.
			if short := f.SentPackets - f.RecvPackets; short < 0 || short > udpInFlight(c) {
				fail("%s: %d datagrams sent, the receiver accounts for %d (more apart than its buffer holds, %d)", dir, f.SentPackets, f.RecvPackets, udpInFlight(c))
			}
		case c.UDP():
			if f.SentPackets != f.RecvPackets {
				fail("%s: %d datagrams sent, the receiver accounts for %d", dir, f.SentPackets, f.RecvPackets)
			}
			if f.Lost == 0 && f.SentBytes != f.RecvBytes {
				fail("%s: %d bytes sent, %d received with no datagram lost", dir, f.SentBytes, f.RecvBytes)
			}
		case exact:
			if f.SentBytes != f.RecvBytes {
				fail("%s: %d bytes sent, %d received", dir, f.SentBytes, f.RecvBytes)
			}
		default:
			// A stock receiver that ends the test stops reading at its
			// end: what was still in flight or queued is sent and never
			// read, for stock senders too. That is at most what the two
			// ends' socket buffers hold (autotuning's maxima, per
			// stream), and the receiver is never over.
			//
			// A stock client that receives (-R) and ends the test at its
			// timer goes on reading after its TEST_END, uncounted, so
			// that a sender blocked on a full window can hear it: what
			// the sender writes until TEST_END reaches it is sent and
			// never counted, on top of the buffers (drainAllowance).
			gap := f.SentBytes - f.RecvBytes
			bound := inFlightBound(c)
			if f.Reverse && stockReceives(r.Way, f.Reverse) {
				bound += drainAllowance(f.SentRate)
			}
			if gap < 0 || gap > bound {
				fail("%s: %d bytes sent, %d received (more apart than the buffers and the sender's reaction to TEST_END allow, %d B)", dir, f.SentBytes, f.RecvBytes, bound)
			}
		}
		lost := 0.0 // the rate the receiver could not count: unread at its end
		if !c.UDP() && !exact && f.RecvSecs > 0 {
			lost = float64(max(f.SentBytes-f.RecvBytes, 0)) * 8 / f.RecvSecs
		}
		rateTol := RateTolerance
		if hasFlag(c.Args, "--bidir") && !hasFlag(c.Args, "-b") && r.Way == TcpscopeToStock {
			rateTol = bidirRateTolerance
		}
		if c.RateTol > 0 {
			rateTol = c.RateTol
		}
		if d := relDiff(f.SentRate, f.RecvRate+lost); d > rateTol && (!c.UDP() || f.Lost == 0) {
			fail("%s: sender's rate %.4g bit/s, receiver's %.4g (%.1f%% apart)", dir, f.SentRate, f.RecvRate, 100*d)
		}
		// A stock server sending unpaced may run past -n by its writes
		// in flight (1 GiB -R: 1,046,032 bytes over); short of it, or
		// tcpscope's senders past it, is wrong.
		if budget > 0 && !c.UDP() && (f.SentBytes < budget || f.SentBytes > budget && !stockSends(r.Way, f.Reverse)) {
			fail("%s: -n %d sent %d bytes", dir, budget, f.SentBytes)
		}
		if budget > 0 && c.UDP() && (f.SentBytes < budget || f.SentBytes >= budget+int64(sizeFlagOr(c.Args, "-l", 1460))) {
			fail("%s: -n %d sent %d bytes (stock sends whole datagrams until the budget is met)", dir, budget, f.SentBytes)
		}
		if hasFlag(c.Args, "-k") && ref != nil && ref.Harness == nil && len(ref.Flows) == len(r.Flows) {
			// With -R a stock client counts its reads as blocks, and a
			// read may take part of one (blockReadTolerance). Sent
			// forward, -k is exact.
			tol := RateTolerance
			if hasFlag(c.Args, "-R") {
				tol = blockReadTolerance
			}
			rf := ref.Flows[0]
			if d := relDiff(float64(f.SentBytes), float64(rf.SentBytes)); d > tol {
				fail("%s: -k sent %d bytes, stock sends %d", dir, f.SentBytes, rf.SentBytes)
			}
		}
		if r.Rate != "" && !c.UDP() {
			// A concurrent client must be told its own numbers (its bytes
			// match exactly above); at a rate a loaded host can keep,
			// that rate too.
			target, err := parseRate(r.Rate)
			if err == nil && relDiff(f.RecvRate, target) > 0.1 {
				fail("%s: a client at -b %s was told %.4g bit/s arrived", dir, r.Rate, f.RecvRate)
			}
		}
	}
	if missing := missingKeys(r, ref); len(missing) > 0 {
		fail("the document lacks keys stock's has: %s", strings.Join(missing, ", "))
	}
	return bad
}

// missingKeys are the keys of the reference's document (a stock client
// against a stock server, same flags) that r's lacks: what a parser of
// iperf3's document would not find.
func missingKeys(r Result, ref *Result) []string {
	if r.Way == Reference || ref == nil || ref.Harness != nil || ref.Exit != 0 || ref.Error != "" || len(r.Keys) == 0 {
		return nil
	}
	have := map[string]bool{}
	for _, k := range r.Keys {
		have[k] = true
	}
	var out []string
	for _, k := range ref.Keys {
		if !have[k] {
			out = append(out, k)
		}
	}
	return out
}

// exactWay says whether a flow's two counts must agree to the byte:
// where tcpscope receives (it reads to the end of the stream), and where
// tcpscope's client sends to a stock server (it ends the test only once
// what it wrote has been read). Where a stock client receives and ends
// the test, bytes still in flight at its end are never read, whoever
// sent them.
func exactWay(w Way, reverse bool) bool {
	switch w {
	case StockToTcpscope:
		return !reverse
	case TcpscopeToStock:
		return true
	}
	return false
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

func firstLine(s ...string) string {
	for _, x := range s {
		if x = strings.TrimSpace(x); x != "" {
			return strings.SplitN(x, "\n", 2)[0]
		}
	}
	return "(no message)"
}

// sizeFlag is a flag's byte size as iperf3 reads it (K/M/G: 1024s); 0
// when absent.
func sizeFlag(args []string, name string) int64 {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			v, err := parseSize(args[i+1])
			if err == nil {
				return v
			}
		}
	}
	return 0
}

func sizeFlagOr(args []string, name string, def int64) int64 {
	if v := sizeFlag(args, name); v > 0 {
		return v
	}
	return def
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	return int64(v * float64(mult)), err
}

// parseRate reads -b as iperf3 does: K/M/G as powers of 1000.
func parseRate(s string) (float64, error) {
	mult := 1.0
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1e3
	case "M":
		mult = 1e6
	case "G":
		mult = 1e9
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * mult, err
}

// stockSends reports whether a flow's sender is a stock iperf3.
func stockSends(w Way, reverse bool) bool {
	switch w {
	case TcpscopeToStock:
		return reverse
	case StockToTcpscope:
		return !reverse
	}
	return true
}

// stockReceives reports whether a flow's receiver is a stock iperf3: the
// server of tcpscope → iperf3, the client of reverse flows otherwise, and
// both ends of the reference.
func stockReceives(w Way, reverse bool) bool {
	switch w {
	case TcpscopeToStock:
		return !reverse
	case StockToTcpscope:
		return reverse
	}
	return true
}

// udpInFlight is the most datagrams a stock UDP receiver may leave out of
// its account at its end: per stream, what its socket's default receive
// buffer (net.core.rmem_default; iperf3 sets none without -w) holds of
// the case's datagrams.
func udpInFlight(c Case) int64 {
	streams := streamsOf(c)
	buf := sysctlField("net/core/rmem_default", 0, 208*1024)
	return streams * buf / max(sizeFlagOr(c.Args, "-l", 1460), 1)
}

// streamsOf is the case's -P, or 1.
func streamsOf(c Case) int64 {
	for i := 0; i+1 < len(c.Args); i++ {
		if c.Args[i] == "-P" {
			if n, err := strconv.ParseInt(c.Args[i+1], 10, 64); err == nil {
				return n
			}
		}
	}
	return 1
}

// endReaction is how long a sender may take to stop once the stock
// client that receives sent TEST_END: the control message's way through
// both hosts' schedulers. On a quiet 2-core machine a -R -P 2 test's
// uncounted bytes at loopback speed came to 2-9 ms of the rate with
// tcpscope's server and 1-6 ms with stock's (docs/INTEROP.md); a CI run
// under load saw about 15 ms.
const endReaction = 50 * time.Millisecond

// drainAllowance is what a sender at rate (bit/s) writes in endReaction.
func drainAllowance(rate float64) int64 {
	return int64(rate / 8 * endReaction.Seconds())
}

// inFlightBound is the most a flow's receiver may be short where stock
// stops reading at its end: per stream, the largest receive and send
// buffers autotuning may grow to (tcp_rmem and tcp_wmem maxima).
func inFlightBound(c Case) int64 {
	streams := streamsOf(c)
	return streams * (sysctlField("net/ipv4/tcp_rmem", 2, 32<<20) + sysctlField("net/ipv4/tcp_wmem", 2, 32<<20))
}

// sysctlField is field i of the sysctl at /proc/sys/PATH (tcp_rmem's
// third is its maximum), or def where it cannot be read.
func sysctlField(path string, i int, def int64) int64 {
	b, err := os.ReadFile("/proc/sys/" + path)
	if f := strings.Fields(string(b)); err == nil && i < len(f) {
		if v, err := strconv.ParseInt(f[i], 10, 64); err == nil {
			return v
		}
	}
	return def
}
