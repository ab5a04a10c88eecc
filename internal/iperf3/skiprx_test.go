package iperf3_test

import (
	"context"
	"testing"

	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/model"
)

// skip_rx_copy on iperf3's protocol: tcpscope's server takes it from a
// client (as from iperf3 3.19+) and receives with MSG_TRUNC; tcpscope's
// client receiving (-R) from a stock 3.12 server, which ignores it, reads
// with MSG_TRUNC itself. Every count stays exact.
func TestIperf3SkipRxCopy(t *testing.T) {
	const n = 16 * model.MiB
	port, records := tcpscopeServer(t, false)
	client := &iperf3.Client{Version: "test"}
	for _, reverse := range []bool{false, true} {
		run, err := client.Run(context.Background(), "127.0.0.1:"+port, model.TestConfig{Bytes: n, Reverse: reverse, SkipRxCopy: true})
		if err != nil {
			t.Fatal(err)
		}
		rec := <-records
		if rec.Err != nil || !rec.Config.SkipRxCopy {
			t.Errorf("-R %v: the server's record: error %v, skip-rx-copy %v", reverse, rec.Err, rec.Config.SkipRxCopy)
		}
		if s := run.Summary[0]; s.SenderBytes.V != n || s.ReceiverBytes.V != n {
			t.Errorf("-R %v: sent %v, received %v, want %d", reverse, s.SenderBytes, s.ReceiverBytes, n)
		}
	}
	addr, wait := iperf3Server(t)
	run, err := client.Run(context.Background(), addr, model.TestConfig{Bytes: n, Reverse: true, SkipRxCopy: true})
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := endSum(wait(), "sum_sent")
	if s := run.Summary[0]; s.ReceiverBytes.V < n || float64(s.ReceiverBytes.V) != got {
		t.Errorf("stock server -R: it sent %.0f B, tcpscope received %v (at least %d)", got, s.ReceiverBytes, n)
	}
}
