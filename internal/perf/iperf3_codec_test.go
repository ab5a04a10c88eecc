package perf

import (
	"encoding/json"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// UDP results as iperf3 reads them: counts include the omitted start, and
// the omitted share rides beside them (3.21 shows a sender's total as
// packets − omitted_packets, so both must be there).
func TestI3UDPResultsOmitted(t *testing.T) {
	totals := []model.StreamTotal{{Stream: 0, Role: model.Receiver,
		UDP:        &model.Datagrams{Packets: 900, Lost: 9, Jitter: 2e6},
		UDPOmitted: &model.Datagrams{Packets: 100, Lost: 1}}}
	b, err := json.Marshal(i3ResultsOf(totals))
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
	var r i3Results
	_ = json.Unmarshal(b, &r)
	if tot := serverTotals(&r, run); tot[0].UDP.Packets != 900 || tot[0].UDP.Lost != 9 {
		t.Errorf("with omitted counts: %+v", tot[0].UDP)
	}
	r.Streams[0].OmittedPackets, r.Streams[0].OmittedErrors = nil, nil
	if tot := serverTotals(&r, run); tot[0].UDP.Packets != 900 {
		t.Errorf("without omitted counts: %+v", tot[0].UDP)
	}
}
