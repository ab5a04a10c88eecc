package sockdiag

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// runPorts runs bytecode on a socket's ports the way the kernel's
// inet_diag_bc_run does, for the operations a port filter and split use,
// after checking it as inet_diag_bc_audit does: every "yes" is its op's
// length and every "no" lands on an op reached that way, at the exact end
// (accept) or four bytes past it (reject).
func runPorts(t *testing.T, bc []byte, sport, dport uint16) bool {
	t.Helper()
	starts := map[int]bool{}
	for off := 0; off < len(bc); {
		starts[off] = true
		yes := int(bc[off+1])
		if yes < 4 || yes%4 != 0 {
			t.Fatalf("op at %d: yes %d", off, yes)
		}
		off += yes
	}
	for off := 0; off < len(bc); off += int(bc[off+1]) {
		no := off + int(binary.NativeEndian.Uint16(bc[off+2:]))
		if !starts[no] && no != len(bc) && no != len(bc)+4 {
			t.Fatalf("op at %d: no lands at %d, not on an op", off, no)
		}
	}
	off := 0
	for off < len(bc) {
		code, port := bc[off], binary.NativeEndian.Uint16(bc[off+6:])
		var yes bool
		switch code {
		case bcJmp:
			yes = false
		case bcSGE:
			yes = sport >= port
		case bcSLE:
			yes = sport <= port
		case bcDGE:
			yes = dport >= port
		case bcDLE:
			yes = dport <= port
		default:
			t.Fatalf("op %d at %d: not a port test", code, off)
		}
		if yes {
			off += int(bc[off+1])
		} else {
			off += int(binary.NativeEndian.Uint16(bc[off+2:]))
		}
	}
	return off == len(bc)
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
	for _, q := range []string{"", "sport 22", "dport 46884", "sport 50000 dport 22"} {
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
			want := 1
			for _, cond := range f.Conds {
				if p := c.s; cond.Dst {
					p = c.d
					if p != cond.Port {
						want = 0
					}
				} else if p != cond.Port {
					want = 0
				}
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
