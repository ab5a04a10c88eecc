package interop

import (
	"os"
	"strings"
	"testing"
)

// Documents stock iperf3 3.12 wrote (-J): both flows of a --bidir run
// and the datagram account of a UDP run parse as they should.
func TestParseStockDocuments(t *testing.T) {
	b, err := os.ReadFile("testdata/stock-bidir.json")
	if err != nil {
		t.Fatal(err)
	}
	flows, msg, err := ParseDocument(b, false, false)
	if err != nil || msg != "" || len(flows) != 2 {
		t.Fatalf("flows %d, error %q, %v; want 2 flows", len(flows), msg, err)
	}
	if flows[0].Reverse || !flows[1].Reverse || flows[0].SentBytes <= 0 || flows[1].RecvBytes <= 0 {
		t.Errorf("flows %+v", flows)
	}
	b, err = os.ReadFile("testdata/stock-udp.json")
	if err != nil {
		t.Fatal(err)
	}
	flows, _, err = ParseDocument(b, true, false)
	if err != nil || len(flows) != 1 || flows[0].SentPackets != 39 || flows[0].RecvPackets != 39 {
		t.Fatalf("udp flows %+v, %v", flows, err)
	}
}

// The checks catch what they are for, and pass what is right.
func TestCheck(t *testing.T) {
	tcp := Case{Name: "tcp", Args: []string{"-t", "1"}}
	good := Flow{SentBytes: 1000, RecvBytes: 1000, SentRate: 8000, RecvRate: 8000}
	for _, tc := range []struct {
		name string
		c    Case
		r    Result
		want string // a phrase of the failure; "" for none
	}{
		{"exact", tcp, Result{Way: StockToTcpscope, Flows: []Flow{good}}, ""},
		{"a byte short", tcp, Result{Way: StockToTcpscope, Flows: []Flow{{SentBytes: 1000, RecvBytes: 999, SentRate: 8000, RecvRate: 7992}}}, "bytes sent"},
		{"stock receiver ends the test", Case{Args: []string{"-t", "1", "-R"}}, Result{Way: StockToTcpscope,
			Flows: []Flow{{Reverse: true, SentBytes: 1000, RecvBytes: 995, SentRate: 8000, RecvRate: 7960, RecvSecs: 1}}}, ""},
		{"stock receiver over the sender", Case{Args: []string{"-t", "1", "-R"}}, Result{Way: StockToTcpscope,
			Flows: []Flow{{Reverse: true, SentBytes: 1000, RecvBytes: 1001, SentRate: 8000, RecvRate: 8008, RecvSecs: 1}}}, "more apart"},
		{"stock receiver short by more than the buffers", Case{Args: []string{"-t", "1", "-R"}}, Result{Way: StockToTcpscope,
			Flows: []Flow{{Reverse: true, SentBytes: 1 << 40, RecvBytes: 1 << 39, SentRate: 8 << 40, RecvRate: 8 << 39, RecvSecs: 1}}}, "more apart"},
		{"stock receiver drains after its TEST_END (CI: -R -P 2 at 42 Gbit/s)", Case{Args: []string{"-t", "1", "-R", "-P", "2"}}, Result{Way: StockToTcpscope,
			Flows: []Flow{{Reverse: true, SentBytes: 5270142976, RecvBytes: 5180084746, SentRate: 42161143808, RecvRate: 41440677968, RecvSecs: 1}}}, ""},
		{"stock server short by more than the buffers", Case{Args: []string{"-t", "1"}}, Result{Way: Reference,
			Flows: []Flow{{SentBytes: 5270142976, RecvBytes: 4270142976, SentRate: 42161143808, RecvRate: 34161143808, RecvSecs: 1}}}, "more apart"},
		{"bidir at full speed against a stock server: its clock (20 runs)", Case{Args: []string{"--bidir"}}, Result{Way: TcpscopeToStock,
			Flows: []Flow{{SentBytes: 2888750000, RecvBytes: 2888750000, SentRate: 2.311e10, RecvRate: 2.263e10, RecvSecs: 1.021}, {Reverse: true, SentBytes: 2962500000, RecvBytes: 2962500000, SentRate: 2.318e10, RecvRate: 2.37e10, RecvSecs: 1}}}, ""},
		{"bidir at full speed against a stock server: what it had not read by TEST_END is not a rate gap", Case{Args: []string{"--bidir"}}, Result{Way: TcpscopeToStock,
			Flows: []Flow{{SentBytes: 100_000_000, RecvBytes: 99_000_000, SentRate: 8e8, RecvRate: 99e6 * 8 / 1.025, SentSecs: 1, RecvSecs: 1.025}, {Reverse: true, SentBytes: 1e8, RecvBytes: 1e8, SentRate: 8e8, RecvRate: 8e8, RecvSecs: 1}}}, ""},
		{"bidir at full speed against a stock server, rates further apart", Case{Args: []string{"--bidir"}}, Result{Way: TcpscopeToStock,
			Flows: []Flow{{SentBytes: 2888750000, RecvBytes: 2888750000, SentRate: 2.311e10, RecvRate: 2.2e10, RecvSecs: 1.05}, {Reverse: true, SentBytes: 2962500000, RecvBytes: 2962500000, SentRate: 2.318e10, RecvRate: 2.318e10, RecvSecs: 1}}}, "apart"},
		{"bidir at full speed against tcpscope's server", Case{Args: []string{"--bidir"}}, Result{Way: StockToTcpscope,
			Flows: []Flow{{SentBytes: 2888750000, RecvBytes: 2888750000, SentRate: 2.311e10, RecvRate: 2.263e10, RecvSecs: 1.021}, {Reverse: true, SentBytes: 2962500000, RecvBytes: 2962500000, SentRate: 2.318e10, RecvRate: 2.318e10, RecvSecs: 1}}}, "apart"},
		{"rates apart", tcp, Result{Way: TcpscopeToStock, Flows: []Flow{{SentBytes: 1000, RecvBytes: 1000, SentRate: 8000, RecvRate: 9000}}}, "apart"},
		{"nothing moved", tcp, Result{Way: StockToTcpscope, Flows: []Flow{{}}}, "nothing sent"},
		{"bidir with one flow", Case{Args: []string{"--bidir"}}, Result{Way: StockToTcpscope, Flows: []Flow{good}}, "want 2"},
		{"error", tcp, Result{Way: StockToTcpscope, Error: "the server is busy running a test. try again later"}, "busy"},
		{"udp datagram missing", Case{Args: []string{"-u"}}, Result{Way: StockToTcpscope,
			Flows: []Flow{{SentBytes: 1000, RecvBytes: 900, SentRate: 8000, RecvRate: 8000, SentPackets: 10, RecvPackets: 9}}}, "datagrams sent"},
		{"udp datagram still queued for a stock server at its end", Case{Args: []string{"-u"}}, Result{Way: TcpscopeToStock,
			Flows: []Flow{{SentBytes: 100000, RecvBytes: 99000, SentRate: 8000, RecvRate: 7990, SentPackets: 100, RecvPackets: 99}}}, ""},
		{"udp stock server accounts for more than was sent", Case{Args: []string{"-u"}}, Result{Way: TcpscopeToStock,
			Flows: []Flow{{SentBytes: 1000, RecvBytes: 1000, SentRate: 8000, RecvRate: 8000, SentPackets: 10, RecvPackets: 11}}}, "datagrams sent"},
		{"bidir: a stock server busy sending leaves bytes unread", Case{Args: []string{"--bidir"}}, Result{Way: TcpscopeToStock,
			Flows: []Flow{{SentBytes: 1000, RecvBytes: 990, SentRate: 8000, RecvRate: 7920, RecvSecs: 1}, {Reverse: true, SentBytes: 1000, RecvBytes: 1000, SentRate: 8000, RecvRate: 8000}}}, ""},
		{"bidir: tcpscope's server reads all", Case{Args: []string{"--bidir"}}, Result{Way: StockToTcpscope,
			Flows: []Flow{{SentBytes: 1000, RecvBytes: 990, SentRate: 8000, RecvRate: 7920, RecvSecs: 1}, {Reverse: true, SentBytes: 1000, RecvBytes: 1000, SentRate: 8000, RecvRate: 8000}}}, "bytes sent"},
		{"-n not filled", Case{Args: []string{"-n", "1K"}}, Result{Way: StockToTcpscope, Flows: []Flow{{SentBytes: 1000, RecvBytes: 1000, SentRate: 1, RecvRate: 1}}}, "-n 1024"},
		{"swapped results", tcp, Result{Way: StockToTcpscope, Rate: "20M",
			Flows: []Flow{{SentBytes: 1000, RecvBytes: 1000, SentRate: 40e6, RecvRate: 40e6}}}, "was told"},
		{"swapped UDP results", Case{Args: []string{"-u"}}, Result{Way: StockToTcpscope, Rate: "20M",
			Flows: []Flow{{SentBytes: 1000, RecvBytes: 2000, SentRate: 20e6, RecvRate: 40e6, SentPackets: 1, RecvPackets: 2}}}, "datagrams sent"},
	} {
		bad := strings.Join(Check(tc.c, tc.r, nil), "; ")
		if tc.want == "" && bad != "" || tc.want != "" && !strings.Contains(bad, tc.want) {
			t.Errorf("%s: failures %q, want %q", tc.name, bad, tc.want)
		}
	}
}

// A -k budget in -R is held to stock's own run: the stock client counts
// its reads, so a few partial reads may end the test early (88% seen in
// CI), but writes that are not whole blocks (the 9% of the defect this
// check was written for) fail.
func TestCheckBlockBudget(t *testing.T) {
	c := Case{Args: []string{"-k", "100", "-R", "-b", "100M"}}
	ref := &Result{Way: Reference, Flows: []Flow{{Reverse: true, SentBytes: 13107200, RecvBytes: 13107200, SentRate: 100e6, RecvRate: 100e6, RecvSecs: 1}}}
	for _, tc := range []struct {
		sent int64
		want string
	}{{13107200, ""}, {11534336, ""}, {1190000, "-k sent"}} {
		r := Result{Way: StockToTcpscope, Flows: []Flow{{Reverse: true, SentBytes: tc.sent, RecvBytes: tc.sent, SentRate: 100e6, RecvRate: 100e6, RecvSecs: 1}}}
		bad := strings.Join(Check(c, r, ref), "; ")
		if tc.want == "" && bad != "" || tc.want != "" && !strings.Contains(bad, tc.want) {
			t.Errorf("-k sent %d: failures %q, want %q", tc.sent, bad, tc.want)
		}
	}
}
