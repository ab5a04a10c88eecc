package sockdiag

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// runPorts runs bytecode on a socket's ports (addresses 0.0.0.0) as the
// kernel does (runBC).
func runPorts(t *testing.T, bc []byte, sport, dport uint16) bool {
	t.Helper()
	return runBC(t, bc, testSock{family: 2, local: netip.AddrPortFrom(netip.IPv4Unspecified(), sport),
		remote: netip.AddrPortFrom(netip.IPv4Unspecified(), dport)})
}

// Every socket falls in exactly one part of a split dump, with or without
// the filter's own conditions, which still apply.
func TestSplitPartitions(t *testing.T) {
	edges := []uint16{0, 1, 22, splitPort - 2, splitPort - 1, splitPort, splitPort + 1, 65535}
	type ports struct{ s, d uint16 }
	var cases []ports
	for _, s := range edges {
		for _, d := range edges {
			cases = append(cases, ports{s, d})
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		cases = append(cases, ports{uint16(r.UintN(65536)), uint16(r.UintN(65536))})
	}
	for _, q := range []string{"", "sport 22", "dport 46884", "sport 50000 dport 22", "( sport 22 or dport 22 ) and not sport 46884", "sport > 46883 || dport < 1024"} {
		f, err := Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			in := 0
			for part := range 2 {
				bc, err := f.partBytecode(part, 2)
				if err != nil {
					t.Fatal(err)
				}
				if runPorts(t, bc, c.s, c.d) {
					in++
				}
			}
			want := 0
			sv := sockView{local: netip.AddrPortFrom(netip.IPv4Unspecified(), c.s), remote: netip.AddrPortFrom(netip.IPv4Unspecified(), c.d)}
			if kernelEval(f, &sv) {
				want = 1
			}
			if in != want {
				t.Fatalf("filter %q, sport %d dport %d: in %d parts, want %d", q, c.s, c.d, in, want)
			}
		}
	}
	// Ports spread evenly split about evenly.
	f := Filter{}
	n := 0
	for range 10000 {
		bc, _ := f.partBytecode(0, 2)
		if runPorts(t, bc, 5201, uint16(32768+r.UintN(61000-32768))) {
			n++
		}
	}
	if n < 4000 || n > 6000 {
		t.Errorf("part 0 holds %d of 10,000 clients of one server port", n)
	}
}
