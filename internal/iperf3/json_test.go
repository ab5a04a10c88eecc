package iperf3

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	goldenfile "github.com/tcpscope/tcpscope/internal/golden"

	"github.com/tcpscope/tcpscope/internal/model"
)

// load reads a run recorded with `tcpscope test --json`.
func load(t *testing.T, name string) *model.Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var r model.Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

// iperf3's -J shape of recorded runs: golden documents, and what the
// far end did not measure is left out rather than written as 0.
func TestIperf3JSONGolden(t *testing.T) {
	for _, name := range []string{"bidir.json", "iperf3-p2.json", "iperf3-reverse-p2.json", "iperf3-bidir.json", "iperf3-udp.json"} {
		run := load(t, name)
		var out bytes.Buffer
		if err := WriteJSON(&out, run); err != nil {
			t.Fatal(err)
		}
		golden(t, strings.TrimSuffix(name, ".json")+".iperf3.json", out.Bytes())
	}
}

// i3Doc renders a recorded run as iperf3's -J document, decoded.
func i3Doc(t *testing.T, name string) map[string]any {
	t.Helper()
	var out bytes.Buffer
	if err := WriteJSON(&out, load(t, name)); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// at reads a path of keys and array indexes from a decoded document.
func at(doc any, path ...any) (any, bool) {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := doc.(map[string]any)
			if !ok {
				return nil, false
			}
			if doc, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			a, ok := doc.([]any)
			if !ok || k >= len(a) {
				return nil, false
			}
			doc = a[k]
		}
	}
	return doc, true
}

func TestIperf3JSONAgainstStockServer(t *testing.T) {
	rev := i3Doc(t, "iperf3-reverse-p2.json")
	// The sender is the iperf3 server: its kernel figures are unknown,
	// written as iperf3 writes them (0) and listed as unmeasured; its
	// retransmissions, CPU and congestion control are reported.
	none, _ := at(rev, "end", "streams", 0, "sender", "tcpscope_unmeasured")
	for _, k := range []string{"max_snd_cwnd", "max_snd_wnd", "max_rtt", "min_rtt", "mean_rtt"} {
		if v, ok := at(rev, "end", "streams", 0, "sender", k); !ok || v != 0.0 || !slices.Contains(none.([]any), any(k)) {
			t.Errorf("-R: sender.%s = %v, from a server whose kernel was not read (want 0, in tcpscope_unmeasured %v)", k, v, none)
		}
	}
	for path, want := range map[string][]any{
		"retransmits":      {"end", "streams", 0, "sender", "retransmits"},
		"remote CPU":       {"end", "cpu_utilization_percent", "remote_total"},
		"host CPU":         {"end", "cpu_utilization_percent", "host_total"},
		"sender cc":        {"end", "sender_tcp_congestion"},
		"receiver cc":      {"end", "receiver_tcp_congestion"},
		"cookie":           {"start", "cookie"},
		"target_bitrate":   {"start", "target_bitrate"},
		"sum_sent seconds": {"end", "sum_sent", "seconds"},
	} {
		if _, ok := at(rev, want...); !ok {
			t.Errorf("-R: no %s (%v)", path, want)
		}
	}
	if v, _ := at(rev, "end", "cpu_utilization_percent", "remote_total"); v == 0.0 {
		t.Errorf("-R: the iperf3 server's CPU use reads 0")
	}
	fwd := i3Doc(t, "iperf3-p2.json")
	if v, _ := at(fwd, "end", "receiver_tcp_congestion"); v != "bbr" {
		t.Errorf("forward: receiver_tcp_congestion %v, want the server's bbr", v)
	}
	// UDP: the sender's sum carries the direction's loss and jitter; the
	// iperf3 server does not count late datagrams.
	udp := i3Doc(t, "iperf3-udp.json")
	for _, k := range []string{"jitter_ms", "lost_packets", "lost_percent", "packets"} {
		if _, ok := at(udp, "end", "sum_sent", k); !ok {
			t.Errorf("UDP: sum_sent lacks %s", k)
		}
	}
	none, _ = at(udp, "end", "streams", 0, "udp", "tcpscope_unmeasured")
	if v, _ := at(udp, "end", "streams", 0, "udp", "out_of_order"); v != 0.0 || none == nil || !slices.Contains(none.([]any), any("out_of_order")) {
		t.Errorf("UDP: out_of_order %v from a server that does not count it, unmeasured %v (want 0, listed)", v, none)
	}
	if s, r := mustAt(t, udp, "end", "sum_sent", "sender"), mustAt(t, udp, "end", "sum_received", "sender"); s != true || r != false {
		t.Errorf("UDP sums' sender flags %v/%v, want iperf3's true/false", s, r)
	}
	// The sender's sum is over the sender's time, not the receiver's.
	run := load(t, "iperf3-reverse-p2.json")
	var longest float64
	for _, tot := range run.Remote.Totals {
		longest = max(longest, tot.Duration.Seconds())
	}
	if v, _ := at(rev, "end", "sum_sent", "seconds"); v != longest {
		t.Errorf("-R: sum_sent seconds %v, the sender's longest stream %v", v, longest)
	}
}

func mustAt(t *testing.T, doc any, path ...any) any {
	t.Helper()
	v, ok := at(doc, path...)
	if !ok {
		t.Fatalf("no %v", path)
	}
	return v
}

// A failed test still prints iperf3's document: what is known of start,
// an empty end, and the error.
func TestIperf3JSONError(t *testing.T) {
	req := &model.Run{Server: "192.0.2.7:5201", Config: model.TestConfig{Protocol: "tcp", Parallel: 1, Length: model.MiB},
		Client: model.EndReport{Version: "test", Kernel: "6.1"}}
	var out bytes.Buffer
	if err := WriteJSONError(&out, req, "connection refused"); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["error"] != "connection refused" || len(doc["end"].(map[string]any)) != 0 || len(doc["intervals"].([]any)) != 0 {
		t.Errorf("document %s", out.String())
	}
	if _, ok := at(doc, "start", "connecting_to", "port"); !ok {
		t.Errorf("start lacks connecting_to: %s", out.String())
	}
}

// -i 0: iperf3's document has one interval spanning the test; folding a
// recorded run's intervals keeps every stream's bytes, retransmissions
// and datagrams, and puts the rate over the whole span.
func TestWholeTest(t *testing.T) {
	for _, name := range []string{"iperf3-bidir.json", "iperf3-udp.json", "iperf3-p2.json"} {
		run := load(t, name)
		ivs := run.Client.Intervals
		if len(ivs) < 2 {
			t.Fatalf("%s: %d intervals, the test needs at least 2", name, len(ivs))
		}
		whole := WholeTest(run)
		if len(run.Client.Intervals) != len(ivs) {
			t.Fatalf("%s: WholeTest changed the run's intervals", name)
		}
		if n := len(whole.Client.Intervals); n != 1 {
			t.Fatalf("%s: %d intervals, want 1", name, n)
		}
		one := whole.Client.Intervals[0]
		if one.Start != ivs[0].Start || one.End != ivs[len(ivs)-1].End {
			t.Errorf("%s: span %v-%v, want %v-%v", name, one.Start, one.End, ivs[0].Start, ivs[len(ivs)-1].End)
		}
		for _, si := range one.Streams {
			var sum model.Bytes
			var retr uint32
			var pkts, lost int64
			for _, iv := range ivs {
				for _, s := range iv.Streams {
					if s.Stream == si.Stream {
						sum += s.Bytes
						retr += s.RetransSegs
						if s.UDP != nil {
							pkts += s.UDP.Packets
							lost += s.UDP.Lost
						}
					}
				}
			}
			if si.Bytes != sum || si.RetransSegs != retr {
				t.Errorf("%s stream %d: %d B, %d retransmitted; the intervals sum to %d B, %d", name, si.Stream, si.Bytes, si.RetransSegs, sum, retr)
			}
			if want := model.RateOf(sum, (one.End - one.Start).Seconds()); si.Rate != want {
				t.Errorf("%s stream %d: rate %v, want %v", name, si.Stream, si.Rate, want)
			}
			if si.UDP != nil && (si.UDP.Packets != pkts || si.UDP.Lost != lost) {
				t.Errorf("%s stream %d: %d datagrams, %d lost; the intervals sum to %d, %d", name, si.Stream, si.UDP.Packets, si.UDP.Lost, pkts, lost)
			}
		}
		var out bytes.Buffer
		if err := WriteJSON(&out, whole); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Intervals []json.RawMessage `json:"intervals"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Intervals) != 1 {
			t.Errorf("%s: the document has %d intervals (%v), want 1", name, len(doc.Intervals), err)
		}
	}
}
