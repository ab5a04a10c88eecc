package iperf3_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
)

// tcpscope's iperf3 client against a stock iperf3 server across a
// 20 Mbit/s path with -w 8M, whose send buffer holds 3 s of the path.
// Sending, its sender holds its last writes back so that its queue
// drains by the planned end (-t 10 ran 13.9 s, waiting for the
// acknowledgements before TEST_END), and the stock server counts every
// byte sent. Receiving (-R), the stock server's queue drains past
// TEST_END (-t 10 ran 14.2 s, and counting those bytes over the time to
// TEST_END read 24.5 Mbit/s across the 20 Mbit/s path): the client cuts
// at the bound and counts them over the time they took.
func TestNetnsIperf3ClientTail(t *testing.T) {
	requireIperf3(t)
	const rate = 20 * model.MbitPerSecond
	p := labtest.Pair(t, lab.PairConfig{AtoB: lab.Impairment{Rate: rate}, BtoA: lab.Impairment{Rate: rate}})
	for i, reverse := range []bool{false, true} {
		name := "client sends"
		if reverse {
			name = "server sends (-R)"
		}
		t.Run(name, func(t *testing.T) {
			port := 5202 + i
			var out bytes.Buffer
			cmd := p.B.Command(t.Context(), iperf3Bin(), "-s", "-1", "-J", "-B", p.B.Addr.String(), "-p", strconv.Itoa(port))
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			awaitListenIn(t, p.B, port)

			cfg := model.TestConfig{Duration: 4 * time.Second, Interval: time.Second, Window: 8 * model.MiB, Reverse: reverse}
			c := &iperf3.Client{Version: "test"}
			var run *model.Run
			start := time.Now()
			err := p.A.Do(func() error {
				var err error
				run, err = c.Run(context.Background(), net.JoinHostPort(p.B.Addr.String(), strconv.Itoa(port)), cfg)
				return err
			})
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			sum := run.Summary[0]
			t.Logf("took %v; goodput %v over %v; sent %v, received %v; tail %+v; warnings %q", took.Round(time.Millisecond),
				sum.Goodput.V, sum.Duration.V, sum.SenderBytes.V, sum.ReceiverBytes.V, sum.Tail, run.Warnings)
			// The handshakes, the results' exchange, and a cut's bound.
			if bound := cfg.Duration + engine.CutAfter + time.Second; took > bound {
				t.Errorf("took %v: want at most %v", took, bound)
			}
			if sum.Tail == nil || (!sum.Tail.HeldFor.OK && !sum.Tail.CutAt.OK) {
				t.Fatalf("no note of the held-back writes or of a cut: %+v", sum.Tail)
			}
			cut := sum.Tail.CutAt.OK
			if cut && sum.Tail.Uncounted.V != sum.SenderBytes.V-sum.ReceiverBytes.V {
				t.Errorf("a cut with %v uncounted: want %v written less %v received", sum.Tail.Uncounted, sum.SenderBytes.V, sum.ReceiverBytes.V)
			}
			if got, sent := sum.ReceiverBytes.V, sum.SenderBytes.V; got > sent || (!cut && got != sent) {
				t.Errorf("received %v of %v sent (cut: %v)", got, sent, cut)
			}
			// No more arrived than the path carries in the receiver's
			// time: the tbf's rate counts the headers too.
			if sum.Goodput.V > rate {
				t.Errorf("goodput %v above the path's %v", sum.Goodput.V, rate)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("iperf3 -s: %v", err)
			}
			var doc struct {
				End struct {
					SumSent     struct{ Bytes float64 } `json:"sum_sent"`
					SumReceived struct{ Bytes float64 } `json:"sum_received"`
				} `json:"end"`
			}
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatalf("iperf3 -s -J: %v", err)
			}
			theirs, ours := doc.End.SumReceived.Bytes, sum.ReceiverBytes.V
			if reverse {
				theirs, ours = doc.End.SumSent.Bytes, sum.SenderBytes.V
			}
			if model.Bytes(theirs) != ours {
				t.Errorf("iperf3 -s says %.0f B, the run %v", theirs, ours)
			}
		})
	}
}

// awaitListenIn waits until something listens on port in host h (ss
// there): a probe connection would be a client of iperf3 -s -1.
func awaitListenIn(t *testing.T, h *lab.Host, port int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		out, err := h.Command(t.Context(), "ss", "-Hltn", "sport = :"+strconv.Itoa(port)).Output()
		if err != nil {
			t.Fatalf("ss: %v", err)
		}
		if len(bytes.TrimSpace(out)) > 0 {
			return
		}
	}
	t.Fatalf("nothing listens on port %d in host %s", port, h.Name)
}
