package iperf3_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/model"
)

// udpSum reads one of the UDP sums of an iperf3 -J document.
func udpSum(doc map[string]any, key string) (bytes, packets, lost, bps float64) {
	end, _ := doc["end"].(map[string]any)
	s, ok := end[key].(map[string]any)
	if !ok {
		// iperf3 before 3.10 has only the legacy "sum" for UDP.
		s, _ = end["sum"].(map[string]any)
	}
	f := func(k string) float64 { v, _ := s[k].(float64); return v }
	return f("bytes"), f("packets"), f("lost_packets"), f("bits_per_second")
}

// near reports a and b within frac of each other.
func near(a, b, frac float64) bool { return math.Abs(a-b) <= frac*math.Max(math.Abs(a), math.Abs(b)) }

// clocksAgree reports whether two ends' rates (or times) of one flow over
// a test of secs seconds agree as closely as the ends' clocks can: within
// rateTol, or within loadSlack of the test's time where that is wider.
// Each end times the flow to its own handling of TEST_END, and on a
// loaded host the two handle it tens of ms apart: over 2% of a 1 s test.
// Without the test's time (0: not reported), rateTol it is.
func clocksAgree(a, b, secs float64) bool {
	tol := rateTol
	if secs > 0 {
		tol = max(tol, loadSlack.Seconds()/secs)
	}
	return near(a, b, tol)
}

// Stock iperf3 clients' UDP tests against a tcpscope server: the server
// counts the datagrams the client says it sent (forward), and the client
// counts those the server says it sent (-R); bytes within a datagram or
// two of each other, rates within 2%.
func TestServeIperf3UDP(t *testing.T) {
	t.Parallel() // paced at a few Mbit/s: runs beside the other paced tests, not the full-speed ones
	modes := [][]string{
		{"-u", "-b", "20M", "-t", "2", "-l", "1400"},
		{"-u", "-b", "20M", "-t", "2", "-l", "1400", "-R"},
		{"-u", "-b", "10M", "-t", "2", "-l", "1400", "--udp-counters-64bit", "-P", "2"},
		{"-u", "-b", "10M", "-k", "500", "-l", "1400"},
		{"-u", "-b", "10M", "-t", "2", "-l", "1400", "--bidir"},
	}
	if testing.Short() {
		modes = [][]string{modes[1], modes[3], modes[4]} // the full tier runs them all
	}
	for _, args := range modes {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel() // each on its own server
			serveIperf3UDP(t, args)
		})
	}
	// The server's own output, on request, with its diagnosis.
	client, records := iperf3Clients(t, false)
	doc, err := client("-u", "-b", "5M", "-t", "1", "--get-server-output")
	<-records
	if text, _ := doc["server_output_text"].(string); err != nil || !strings.Contains(text, "Jitter    Lost/Total Datagrams") || !strings.Contains(text, "diagnosis: explained") {
		t.Errorf("--get-server-output: %v, %q", err, text)
	}
	// And as JSON from a server that logs JSON, as from iperf3 -s -J
	// (paced, as the tests beside it are).
	client, records = iperf3Clients(t, true)
	doc, err = client("-t", "1", "-b", "50M", "--get-server-output")
	<-records
	out, _ := doc["server_output_json"].(map[string]any)
	end, _ := out["server_end"].(map[string]any)
	if totals, _ := end["totals"].([]any); err != nil || len(totals) != 1 || out["diagnosis"] == nil {
		t.Errorf("--get-server-output from a JSON server: %v, %v", err, out)
	}
}

// serveIperf3UDP runs a stock iperf3 client's UDP test with args against
// a tcpscope server and checks the two ends' counts agree.
func serveIperf3UDP(t *testing.T, args []string) {
	const dgram = 1400
	client, records := iperf3Clients(t, false)
	doc, err := client(args...)
	if err != nil {
		t.Fatalf("iperf3 %v: %v", args, err)
	}
	rec := <-records
	if rec.Err != nil || rec.Ended != "complete" || !rec.Config.IsUDP() {
		t.Fatalf("iperf3 %v: server record %v, %q, %+v", args, rec.Err, rec.Ended, rec.Config)
	}
	var ours model.Datagrams
	var ourBytes model.Bytes
	var ourRate model.Bitrate
	reverse := args[len(args)-1] == "-R"
	for _, tot := range rec.Report.Totals {
		if tot.UDP == nil {
			t.Fatalf("iperf3 %v: stream %d without a datagram account", args, tot.Stream)
		}
		if (tot.Role == model.Sender) == reverse {
			ours.Packets += tot.UDP.Packets
			ours.Lost += tot.UDP.Lost
			ourBytes += tot.Bytes
			ourRate += tot.Rate
		}
	}
	if args[len(args)-1] == "--bidir" {
		// Both ways ran and were counted; the sums are checked above.
		if len(rec.Report.Totals) != 2 {
			t.Errorf("bidir: %d streams", len(rec.Report.Totals))
		}
		return
	}
	// The other end's own count: the client sent (forward) or received (-R).
	key := "sum_sent"
	if reverse {
		key = "sum_received"
	}
	b, packets, lost, bps := udpSum(doc, key)
	t.Logf("iperf3 %v: client %s %.0f B, %.0f datagrams (%.0f lost), %.0f bit/s; server %d B, %d datagrams (%d lost), %v",
		args, key, b, packets, lost, bps, ourBytes, ours.Packets, ours.Lost, ourRate)
	if reverse {
		// The client's expected count is the server's sent count,
		// but for datagrams in flight when the test ended: the
		// client counts to its TEST_END, and what the server sends
		// until TEST_END reaches it goes uncounted. That took 2 ms
		// under the race detector with another package's tests
		// beside it; 25 ms of the rate bounds it.
		late := math.Ceil(bps / 8 / dgram * 0.025)
		if d := float64(ours.Packets) - packets; d < 0 || d > late || math.Abs(float64(ourBytes)-b-lost*dgram) > late*dgram {
			t.Errorf("-R: the server sent %d datagrams (%d B), the client expected %.0f and got %.0f B", ours.Packets, ourBytes, packets, b)
		}
	} else if float64(ours.Packets) != packets || math.Abs(float64(ourBytes)+float64(ours.Lost)*dgram-b) > dgram {
		t.Errorf("%v: the client sent %.0f datagrams (%.0f B), the server expected %d and got %d B", args, packets, b, ours.Packets, ourBytes)
	}
	if _, secs, _ := endSum(doc, key); !strings.Contains(strings.Join(args, " "), "-k") && !clocksAgree(float64(ourRate), bps, secs) {
		t.Errorf("%v: rates %v (server) and %.0f bit/s (client) differ by over %.0f%%", args, ourRate, bps, 100*rateTol)
	}
}

// tcpscope's client against a stock iperf3 server, UDP both ways and a
// byte count: each completes and the counts agree with iperf3's.
func TestIperf3ServerUDP(t *testing.T) {
	t.Parallel() // paced at a few Mbit/s: runs beside the other paced tests, not the full-speed ones
	for _, tc := range []struct {
		name string
		cfg  model.TestConfig
		key  string // iperf3's own sum: what its server received, or sent in -R
	}{
		{"udp", model.TestConfig{Protocol: model.UDP, Duration: 2 * time.Second, Bitrate: 20 * model.MbitPerSecond}, "sum_received"},
		{"udp-reverse", model.TestConfig{Protocol: model.UDP, Duration: 2 * time.Second, Bitrate: 20 * model.MbitPerSecond, Reverse: true}, "sum_sent"},
		{"udp-64bit", model.TestConfig{Protocol: model.UDP, Duration: 2 * time.Second, Bitrate: 10 * model.MbitPerSecond, Counters64: true, Parallel: 2}, "sum_received"},
		{"bytes", model.TestConfig{Bytes: 20 * model.MiB}, "sum_received"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inShort(t, map[string]bool{"udp-reverse": true, "bytes": true}, tc.name)
			t.Parallel() // each against its own iperf3 server
			addr, wait := iperf3Server(t)
			run, err := (&iperf3.Client{Version: "test"}).Run(context.Background(), addr, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			doc := wait()
			if len(run.Summary) != 1 || run.Ended != "complete" {
				t.Fatalf("summary %+v, ended %q", run.Summary, run.Ended)
			}
			s := run.Summary[0]
			b, packets, lost, bps := udpSum(doc, tc.key)
			t.Logf("ours: %d B received of %d sent, %+v; iperf3 -s %s: %.0f B, %.0f datagrams, %.0f lost, %.0f bit/s",
				s.ReceiverBytes.V, s.SenderBytes.V, s.UDP, tc.key, b, packets, lost, bps)
			switch {
			case !tc.cfg.IsUDP():
				if float64(s.ReceiverBytes.V) != b || s.SenderBytes.V != tc.cfg.Bytes {
					t.Errorf("byte count: sent %d, the server received %.0f", s.SenderBytes.V, b)
				}
			case s.UDP == nil:
				t.Errorf("no datagram account")
			case tc.cfg.Reverse:
				// Our receiver's count against the iperf3 server's sent count.
				if d := packets - float64(s.UDP.Packets); d < 0 || d > 2 {
					t.Errorf("iperf3 sent %.0f datagrams, we expected %d", packets, s.UDP.Packets)
				}
			case b == 0 && i3Version(doc) < 10:
				// 3.9's server reports UDP bytes as 0: the datagrams only.
				if float64(s.UDP.Packets) != packets {
					t.Errorf("we sent %d datagrams, iperf3 counted %.0f", s.UDP.Packets, packets)
				}
			default:
				if float64(s.UDP.Packets) != packets || float64(s.ReceiverBytes.V) != b {
					t.Errorf("we sent %d datagrams, iperf3 counted %.0f (%.0f B vs our %d)", s.UDP.Packets, packets, b, s.ReceiverBytes.V)
				}
			}
			// 3.9 times its streams to its own handling of TEST_END, and
			// in -R starts sending before this end's clock: its rates
			// are not the receiver's.
			if tc.cfg.IsUDP() && i3Version(doc) >= 10 && !clocksAgree(float64(s.Goodput.V), bps, s.Duration.V.Seconds()) {
				t.Errorf("goodput %v against iperf3's %.0f bit/s", s.Goodput.V, bps)
			}
		})
	}
}

// Four stock iperf3 UDP clients from one address at once, round after
// round: each gets its own test's numbers. iperf3's UDP hello names no
// test; the server used to give it to the oldest test from the address
// still waiting for streams, which swapped results between concurrent
// clients (the 20M client was told 40M). Now one test per address opens
// its UDP streams at a time.
func TestServeIperf3UDPConcurrent(t *testing.T) {
	t.Parallel() // paced at a few Mbit/s: runs beside the other paced tests, not the full-speed ones
	client, records := iperf3Clients(t, false)
	const dgram = 1400
	for round := range rounds(6, 2) {
		rates := []int{10, 20, 30, 40}
		docs := make([]map[string]any, len(rates))
		errs := make([]error, len(rates))
		var wg sync.WaitGroup
		for i, r := range rates {
			wg.Go(func() {
				docs[i], errs[i] = client("-u", "-b", fmt.Sprintf("%dM", r), "-t", "1", "-l", fmt.Sprint(dgram))
			})
		}
		wg.Wait()
		for range rates {
			if rec := <-records; rec.Err != nil || rec.Ended != "complete" {
				t.Errorf("round %d: server record %v, %q", round, rec.Err, rec.Ended)
			}
		}
		for i, r := range rates {
			if errs[i] != nil {
				t.Errorf("round %d, -b %dM: %v", round, r, errs[i])
				continue
			}
			// The client's own count and the server's, as the client
			// reports them: every datagram sent was expected (seen or
			// lost) by the server, and the rates are the client's.
			sb, sp, _, sbps := udpSum(docs[i], "sum_sent")
			rb, rp, rl, rbps := udpSum(docs[i], "sum_received")
			_, rsec, _ := endSum(docs[i], "sum_received")
			// The server's rate of datagrams expected (received or lost)
			// is the client's sending rate.
			if sp != rp || rb+rl*dgram != sb || rsec == 0 || !clocksAgree((rb+rl*dgram)*8/rsec, sbps, rsec) {
				t.Errorf("round %d, -b %dM: the client sent %.0f datagrams (%.0f B, %.0f bit/s); the server expected %.0f, got %.0f B (%.0f lost), %.0f bit/s",
					round, r, sp, sb, sbps, rp, rb, rl, rbps)
			}
		}
	}
}

// A UDP receiver's time is the test's, as iperf3's is: a sender that keeps
// ahead of its rate sends its last datagram before the end, and a
// receiver timed from the first datagram to the last overstated the rate
// (iperf3 -u -t 3 at 1 Mbit/s: 0.00-2.75 s, 1.14 Mbit/s).
func TestServeIperf3UDPReceiverTime(t *testing.T) {
	t.Parallel() // paced at a few Mbit/s: runs beside the other paced tests, not the full-speed ones
	for i := range 2 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel() // each on its own server
			serveIperf3UDPReceiverTime(t, i)
		})
	}
}

// serveIperf3UDPReceiverTime runs one stock iperf3 UDP client at 1 Mbit/s
// against a tcpscope server and checks the receiver's time and rate are
// the sender's.
func serveIperf3UDPReceiverTime(t *testing.T, i int) {
	client, records := iperf3Clients(t, false)
	doc, err := client("-u", "-b", "1M", "-t", "2")
	rec := <-records
	if err != nil || rec.Err != nil {
		t.Fatalf("run %d: %v, server record %v", i, err, rec.Err)
	}
	sb, ssec, sbps := endSum(doc, "sum_sent")
	rb, rsec, rbps := endSum(doc, "sum_received")
	_, _, lost, _ := udpSum(doc, "sum_received")
	t.Logf("run %d: sent %.0f B in %.3f s, %.0f bit/s; the server received %.0f B in %.3f s, %.0f bit/s", i, sb, ssec, sbps, rb, rsec, rbps)
	if lost == 0 && (rb != sb || !clocksAgree(rsec, ssec, ssec) || !clocksAgree(rbps, sbps, ssec)) {
		t.Errorf("run %d: the receiver's time or rate is not the sender's", i)
	}
}

// -k with UDP: the server counts every datagram the client sent, the last
// one too. The client sends TEST_END right after its last datagram, and
// the server's receiver, ended by TEST_END, used to stop with datagrams
// still queued on its socket ("the client sent 500 datagrams, the server
// expected 499"); it now reads what had arrived. A burst at full speed
// into a large socket buffer leaves many queued: before, nearly every
// run missed some.
func TestServeIperf3UDPBlocksLast(t *testing.T) {
	client, records := iperf3Clients(t, false)
	const k, dgram = 1000, 1400
	for i := range 10 {
		doc, err := client("-u", "-b", "0", "-k", fmt.Sprint(k), "-l", fmt.Sprint(dgram), "-w", "2M")
		rec := <-records
		if err != nil || rec.Err != nil {
			t.Fatalf("run %d: %v, server record %v", i, err, rec.Err)
		}
		sb, sp, _, _ := udpSum(doc, "sum_sent")
		rb, rp, rl, _ := udpSum(doc, "sum_received")
		var drops int64
		for _, tot := range rec.Report.Totals {
			if tot.UDP != nil {
				drops += tot.UDP.SocketDrops.V
			}
		}
		if drops > 0 {
			// The burst overflowed the socket buffer (a host whose
			// net.core.rmem_max caps -w): the last datagrams may be
			// lost here, and so never expected.
			t.Logf("run %d: %d datagrams dropped by the server's socket buffer", i, drops)
			continue
		}
		if sp != k || rp != k || rb+rl*dgram != sb {
			t.Errorf("run %d: the client sent %.0f datagrams (%.0f B); the server expected %.0f and got %.0f B (%.0f lost)", i, sp, sb, rp, rb, rl)
		}
	}
}
