package iperf3

import (
	"encoding/json"
	"testing"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/serve"
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
		var p paramsIn
		if json.Unmarshal(b, &p) != nil {
			return
		}
		cfg, err := p.config()
		if err != nil {
			return
		}
		if cl := fuzzClass(); engine.Normalize(&cfg) == nil && serve.CheckLimits(&cfg, cl, limits.Iperf3) == nil {
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
		var r results
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

// fuzzClass is the class fuzzed configs are checked against: the
// built-in default, with rate caps (as perf's fuzz tests take).
func fuzzClass() *limits.Class {
	c := limits.Builtin().Default
	c.MaxRate = model.GbitPerSecond
	c.MaxUDPRate = 100 * model.MbitPerSecond
	return &c
}

// acceptedWithin fails t unless an accepted cfg is within cl's limits.
// (How the server's end paces an accepted test is perf's to check, in
// its own fuzz tests.)
func acceptedWithin(t *testing.T, cfg model.TestConfig, cl *limits.Class) {
	t.Helper()
	d := span(&cfg)
	n := float64(len(cfg.Directions()))
	switch {
	case cfg.Parallel < 1 || cfg.Parallel > engine.MaxParallel || cfg.Length < 1:
		t.Fatalf("accepted %+v", cfg)
	case len(cfg.Directions()) > cl.MaxStreams:
		t.Fatalf("accepted %d streams over a limit of %d", len(cfg.Directions()), cl.MaxStreams)
	case cfg.Bytes == 0 && (d <= 0 || d > cl.MaxDuration):
		t.Fatalf("accepted a test of %v (-t %v, -O %v) under a limit of %v", d, cfg.Duration, cfg.Omit, cl.MaxDuration)
	case cfg.Bytes < 0 || cfg.Bitrate < 0 || cfg.Omit < 0:
		t.Fatalf("accepted %+v", cfg)
	case cfg.IsUDP() && (cfg.Bitrate == 0 || float64(cfg.Bitrate)*n > float64(cl.MaxUDPRate)):
		t.Fatalf("accepted UDP at -b %v per stream, %v streams, over a cap of %v", cfg.Bitrate, n, cl.MaxUDPRate)
	case !cfg.IsUDP() && float64(cfg.Bitrate)*n > float64(cl.MaxRate):
		t.Fatalf("accepted TCP at -b %v per stream, %v streams, over a cap of %v", cfg.Bitrate, n, cl.MaxRate)
	}
}
