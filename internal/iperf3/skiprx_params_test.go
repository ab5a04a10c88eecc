package iperf3

import (
	"encoding/json"
	"testing"
)

// iperf3 tests zerocopy and skip_rx_copy for a value other than 0 (a
// 3.19+ client sends skip_rx_copy: 1); UDP drops both, as iperf3 does.
func TestCopyParams(t *testing.T) {
	for _, tc := range []struct {
		in       string
		zc, skip bool
	}{
		{`{"tcp":true,"time":1,"len":131072}`, false, false},
		{`{"tcp":true,"time":1,"len":131072,"zerocopy":1,"skip_rx_copy":1}`, true, true},
		{`{"tcp":true,"time":1,"len":131072,"zerocopy":0,"skip_rx_copy":0}`, false, false},
		{`{"udp":true,"time":1,"len":1460,"zerocopy":1,"skip_rx_copy":1}`, false, false},
	} {
		var p paramsIn
		if err := json.Unmarshal([]byte(tc.in), &p); err != nil {
			t.Fatal(err)
		}
		cfg, err := p.config()
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if cfg.ZeroCopy != tc.zc || cfg.SkipRxCopy != tc.skip {
			t.Errorf("%s: zero-copy %v, skip-rx-copy %v; want %v, %v", tc.in, cfg.ZeroCopy, cfg.SkipRxCopy, tc.zc, tc.skip)
		}
	}
}
