package interop

import (
	"strings"
	"testing"
)

// The counters are read by name from /proc/net/snmp's shape, whatever
// their column, and the live files have them.
func TestReadCounters(t *testing.T) {
	doc := "TcpExt: SyncookiesSent TCPOFOQueue TCPDSACKRecv\nTcpExt: 1 22 333\nIpExt: InNoRoutes\nIpExt: 4\n"
	var ofo, dsack int64 = -1, -1
	if err := readCounters(strings.NewReader(doc), "netstat", map[string]*int64{"TcpExt:TCPOFOQueue": &ofo, "TcpExt:TCPDSACKRecv": &dsack}); err != nil || ofo != 22 || dsack != 333 {
		t.Fatalf("out of order %d, DSACKs %d, %v; want 22 and 333", ofo, dsack, err)
	}
	if _, err := (&Harness{}).segments(t.Context()); err != nil {
		t.Fatalf("this host's counters: %v", err)
	}
}

// A document that lacks a key the reference's has fails; extra keys
// (tcpscope's own) do not.
func TestMissingKeys(t *testing.T) {
	ref := &Result{Way: Reference, Keys: []string{".end", ".end.receiver_tcp_congestion", ".end.sum_sent"}}
	r := Result{Way: StockToTcpscope, Keys: []string{".end", ".end.sum_sent", ".end.tcpscope_diagnosis"}}
	if got := missingKeys(r, ref); len(got) != 1 || got[0] != ".end.receiver_tcp_congestion" {
		t.Fatalf("missing %v, want receiver_tcp_congestion", got)
	}
	r.Keys = append(r.Keys, ".end.receiver_tcp_congestion")
	if got := missingKeys(r, ref); len(got) != 0 {
		t.Fatalf("missing %v, want none", got)
	}
	if got := documentKeys([]byte(`{"end":{"streams":[{"sender":{"bytes":1}}]}}`)); len(got) != 4 || got[3] != ".end.streams.[].sender.bytes" {
		t.Fatalf("keys %q", got)
	}
}

// Retransmissions are compared as medians, a reference of none as one
// more segment each.
func TestRetransRatio(t *testing.T) {
	ref := &Tally{Segments: []Segments{{Retrans: 10}, {Retrans: 30}, {Retrans: 20}}}
	ours := &Tally{Segments: []Segments{{Retrans: 45}, {Retrans: 15}, {Retrans: 30}, {Retrans: 900}}}
	if got, ok := RetransRatio(ours, ref); !ok || got != 37.0/20 {
		t.Fatalf("ratio %v, %v; want 37.5/20 as medians", got, ok)
	}
	if got, _ := RetransRatio(&Tally{Segments: []Segments{{Retrans: 3}}}, &Tally{Segments: []Segments{{}}}); got != 4 {
		t.Fatalf("3 against none: %v, want 4", got)
	}
}
