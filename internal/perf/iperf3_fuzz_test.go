package perf

import (
	"encoding/json"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// FuzzIperf3Params: whatever a client sends as parameters, the server
// either refuses it or gets a configuration it can normalize, with a
// positive duration within its limit, and never panics.
func FuzzIperf3Params(f *testing.F) {
	for _, s := range []string{
		`{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":2,"len":131072,"pacing_timer":1000,"client_version":"3.12"}`,
		`{"tcp":true,"time":10,"reverse":false,"parallel":128,"len":1048576,"window":536870912}`,
		`{"udp":true,"bandwidth":1048576,"len":1460}`,
		`{"tcp":true,"num":1e30,"time":-1,"parallel":-5,"len":0}`,
		`{"tcp":true,"congestion":"reno","MSS":536,"nodelay":true,"bidirectional":true}`,
		`[]`, `null`, `{"time":"ten"}`,
		`{"tcp":true,"time":9.2e9,"omit":9.2e9}`, `{"tcp":true,"bandwidth":1e12,"parallel":4}`, `{"udp":true,"bandwidth":0}`, `{"udp":true,"bandwidth":3e7,"parallel":4}`,
		`{"tcp":true,"time":1e300}`, `{"tcp":true,"blockcount":1e15,"len":1e9}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p i3ParamsIn
		if json.Unmarshal(b, &p) != nil {
			return
		}
		cfg, err := p.config()
		if err != nil {
			return
		}
		if cl := fuzzClass(); Normalize(&cfg) == nil && checkLimits(&cfg, cl, true) == nil {
			acceptedWithin(t, cfg, cl)
		}
	})
}

// FuzzIperf3Results: any results document maps onto a run's streams
// without panicking, and only onto streams the run has.
func FuzzIperf3Results(f *testing.F) {
	for _, s := range []string{
		`{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":100,"retransmits":0,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1}]}`,
		`{"sender_has_retransmits":18446744073709551615,"streams":[{"id":3,"bytes":1e20,"retransmits":18446744073709551615,"start_time":5,"end_time":1}]}`,
		`{"streams":[{"id":-1},{"id":99999}]}`,
	} {
		f.Add([]byte(s))
	}
	run := &model.Run{Streams: []model.StreamInfo{{ID: 0, Direction: model.ClientToServer}, {ID: 1, Direction: model.ServerToClient}}}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r i3Results
		if json.Unmarshal(b, &r) != nil {
			return
		}
		for _, tot := range serverTotals(&r, run) {
			if tot.Stream < 0 || tot.Stream >= len(run.Streams) {
				t.Fatalf("total for stream %d of %d", tot.Stream, len(run.Streams))
			}
		}
	})
}
