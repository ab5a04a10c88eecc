package perf

import (
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// TestCPUFromOlderServer: a server older than per-interval CPU sends
// intervals and a done report without it; the client reads them as not
// reported (nil, absent), never as 0% of a core.
func TestCPUFromOlderServer(t *testing.T) {
	iv, err := decodeMessage([]byte(`{"type":"interval","interval":{"index":0,"start_ns":0,"end_ns":1000000000,"streams":[]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if iv.Interval.CPU != nil {
		t.Fatalf("interval CPU %+v from a server that sent none", iv.Interval.CPU)
	}
	done, err := decodeMessage([]byte(`{"type":"done","done":{"side":"server","version":"0.1.0","intervals":null,"totals":[],"cpu":{"total_percent":12.5,"user_percent":2.5,"system_percent":10}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := done.Done; d.CPUs.OK || d.CPUQuota.OK || d.CPU == nil || d.CPU.Throttled.OK {
		t.Fatalf("done from an older server: cpus %v, quota %v, cpu %+v; want the CPU use alone", d.CPUs, d.CPUQuota, d.CPU)
	}
	// And what a current server sends round-trips.
	b, err := appendMessage(nil, &message{Type: msgInterval, Interval: &model.Interval{CPU: &model.CPUUse{Total: 10, User: 1, System: 9, Throttled: model.Some(0.75)}}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeMessage(b[4:])
	if err != nil {
		t.Fatal(err)
	}
	if u := m.Interval.CPU; u == nil || u.Total != 10 || u.Throttled != model.Some(0.75) {
		t.Fatalf("interval CPU %+v after a round trip", u)
	}
}
