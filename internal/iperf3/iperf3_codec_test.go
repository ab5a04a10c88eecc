package iperf3

import (
	"encoding/json"
	"testing"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/model"
)

// UDP results as iperf3 reads them: counts include the omitted start, and
// the omitted share rides beside them (3.21 shows a sender's total as
// packets − omitted_packets, so both must be there).
func TestI3UDPResultsOmitted(t *testing.T) {
	totals := []model.StreamTotal{{Stream: 0, Role: model.Receiver,
		UDP:        &model.Datagrams{Packets: 900, Lost: 9, Jitter: 2e6},
		UDPOmitted: &model.Datagrams{Packets: 100, Lost: 1}}}
	b, err := json.Marshal(resultsOf(totals, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Streams []map[string]float64 `json:"streams"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"id": 1, "packets": 1000, "errors": 10, "omitted_packets": 100, "omitted_errors": 1, "jitter": 0.002}
	for k, v := range want {
		if got.Streams[0][k] != v {
			t.Errorf("%s = %v, want %v (%s)", k, got.Streams[0][k], v, b)
		}
	}
	// And back: the measured period only, whether the peer says what it
	// omitted (3.14+) or this end's own count stands in (older peers).
	run := &model.Run{Config: model.TestConfig{Protocol: model.UDP, Omit: 1e9},
		Streams: []model.StreamInfo{{ID: 0, Direction: model.ClientToServer}},
		Client:  model.EndReport{Totals: []model.StreamTotal{{Stream: 0, Role: model.Sender, UDPOmitted: &model.Datagrams{Packets: 100}}}}}
	var r results
	_ = json.Unmarshal(b, &r)
	if tot := serverTotals(&r, run); tot[0].UDP.Packets != 900 || tot[0].UDP.Lost != 9 {
		t.Errorf("with omitted counts: %+v", tot[0].UDP)
	}
	r.Streams[0].OmittedPackets, r.Streams[0].OmittedErrors = nil, nil
	if tot := serverTotals(&r, run); tot[0].UDP.Packets != 900 {
		t.Errorf("without omitted counts: %+v", tot[0].UDP)
	}
}

// What a client's results say its streams sent, for the server to wait
// for: by stream id, bytes for TCP and datagrams for UDP, only on the
// server's receiving streams; a count absent or not a count (-1, 3.12's
// 2^64-1, a fraction) is absent, never 0.
func TestI3ClientResultsSent(t *testing.T) {
	// Stream ids 1, 3, 4, 5, 6: stream 1 is a sender, the counts of 4, 5
	// and 6 are not counts.
	tcp := []*engine.Stream{engine.NewTCPStream(0, model.Receiver, nil), engine.NewTCPStream(1, model.Sender, nil), engine.NewTCPStream(2, model.Receiver, nil), engine.NewTCPStream(3, model.Receiver, nil), engine.NewTCPStream(4, model.Receiver, nil)}
	msg := `{"streams":[{"id":1,"bytes":1000,"packets":0},{"id":3,"bytes":2000},{"id":4,"bytes":-1},` +
		`{"id":5,"bytes":18446744073709551615},{"id":6,"bytes":1.5},{"bytes":7}]}`
	var r clientResults
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		t.Fatal(err)
	}
	got := r.sent(tcp)
	want := []model.Opt[int64]{model.Some[int64](1000), {}, {}, {}, {}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("TCP stream %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// UDP counts datagrams: bytes alone are no count.
	udp := []*engine.Stream{engine.NewUDPStream(0, model.Receiver, nil, false), engine.NewUDPStream(1, model.Receiver, nil, false)}
	var ru clientResults
	if err := json.Unmarshal([]byte(`{"streams":[{"id":1,"bytes":14000,"packets":10},{"id":3,"bytes":1400}]}`), &ru); err != nil {
		t.Fatal(err)
	}
	got = ru.sent(udp)
	if got[0] != model.Some[int64](10) || got[1].OK {
		t.Errorf("UDP: %+v, want 10 datagrams and absent", got)
	}
}

// TestGSROParams: iperf3 3.21's GSO and GRO parameters never refuse a
// test, whatever their values; gro 1 turns this server's GRO on.
func TestGSROParams(t *testing.T) {
	for _, tc := range []struct {
		params string
		gro    bool
	}{
		// As 3.21 sends them without --gsro, and with it.
		{`{"udp":true,"time":1,"parallel":1,"len":1400,"bandwidth":0,"gso":0,"gso_dg_size":0,"gso_bf_size":65507,"gro":0,"gro_bf_size":65507,"client_version":"3.21"}`, false},
		{`{"udp":true,"time":1,"parallel":1,"len":1400,"bandwidth":0,"gso":1,"gso_dg_size":1400,"gso_bf_size":65507,"gro":1,"gro_bf_size":65507,"client_version":"3.21"}`, true},
		// Nonsense is absent, not an error.
		{`{"udp":true,"time":1,"len":1400,"gso":"yes","gso_dg_size":-5,"gso_bf_size":1e300,"gro":true,"gro_bf_size":null}`, false},
		// TCP tests take no UDP offloads.
		{`{"tcp":true,"time":1,"len":1400,"gro":1}`, false},
	} {
		var p paramsIn
		if err := json.Unmarshal([]byte(tc.params), &p); err != nil {
			t.Fatalf("%s: %v", tc.params, err)
		}
		cfg, err := p.config()
		if err != nil {
			t.Fatalf("%s: %v", tc.params, err)
		}
		if cfg.GRO != tc.gro || cfg.NoGSO {
			t.Errorf("%s: GRO %v, NoGSO %v; want GRO %v, GSO on", tc.params, cfg.GRO, cfg.NoGSO, tc.gro)
		}
	}
}
