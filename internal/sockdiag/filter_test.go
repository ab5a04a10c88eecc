package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// tree is a node as an S-expression, for the parser's tests.
func tree(n *node) string {
	if n == nil {
		return "all"
	}
	end := "s"
	if n.dst {
		end = "d"
	}
	switch n.kind {
	case nPort:
		return fmt.Sprintf("%sport%s%d", end, [...]string{"=", ">=", "<="}[n.cmp], n.port)
	case nAddr:
		if n.port != 0 {
			return fmt.Sprintf("%saddr=%s:%d", end, n.prefix, n.port)
		}
		return fmt.Sprintf("%saddr=%s", end, n.prefix)
	case nState:
		return fmt.Sprintf("state=%#x", n.states)
	case nPID:
		return fmt.Sprintf("pid=%d", n.pid)
	case nAnd:
		return "(and " + tree(n.a) + " " + tree(n.b) + ")"
	case nOr:
		return "(or " + tree(n.a) + " " + tree(n.b) + ")"
	case nNot:
		return "(not " + tree(n.a) + ")"
	}
	return "?"
}

func TestParseGrammar(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "all",
		"dport 22":                      "dport=22",
		"dport = :22":                   "dport=22",
		"dport==22":                     "dport=22",
		"sport >= 1024":                 "sport>=1024",
		"sport>1024":                    "sport>=1025",
		"dport lt :1024":                "dport<=1023",
		"dport != 22":                   "(not dport=22)",
		"dst 10.0.0.0/8":                "daddr=10.0.0.0/8",
		"src 192.0.2.7:443":             "saddr=192.0.2.7/32:443",
		"dst [2001:db8::1]:80":          "daddr=2001:db8::1/128:80",
		"daddr ::ffff:10.0.0.1":         "daddr=10.0.0.1/32",
		"dport 22 sport 80":             "(and dport=22 sport=80)",
		"dport 22 and sport 80":         "(and dport=22 sport=80)",
		"dport 22 && sport 80":          "(and dport=22 sport=80)",
		"dport 22 or sport 22":          "(or dport=22 sport=22)",
		"dport 22 || sport 22":          "(or dport=22 sport=22)",
		"not dport 22":                  "(not dport=22)",
		"! dport 22":                    "(not dport=22)",
		"!dport 22":                     "(not dport=22)",
		"not not dport 22":              "(not (not dport=22))",
		"NOT dport 22 OR sport 22":      "(or (not dport=22) sport=22)",
		"dport 1 or dport 2 dport 3":    "(or dport=1 (and dport=2 dport=3))",
		"dport 1 dport 2 or dport 3":    "(or (and dport=1 dport=2) dport=3)",
		"dport 1 or dport 2 or dport 3": "(or (or dport=1 dport=2) dport=3)",
		"( dport 22 or sport 22 ) and state established":  "(and (or dport=22 sport=22) state=0x2)",
		"(dport 22 or sport 22) state established":        "(and (or dport=22 sport=22) state=0x2)",
		"not ( dport 1 or ( sport 2 and dst 10.0.0.1 ) )": "(not (or dport=1 (and sport=2 daddr=10.0.0.1/32)))",
		"state established or pid 42":                     "(or state=0x2 pid=42)",
		"state all":                                       "state=0xffe",
		"dst != 10.0.0.0/8":                               "(not daddr=10.0.0.0/8)",
	} {
		f, err := Parse(in)
		if err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if got := tree(f.expr); got != want {
			t.Errorf("Parse(%q) = %s, want %s", in, got, want)
		}
		if f.String() != strings.TrimSpace(in) {
			t.Errorf("Parse(%q).String() = %q", in, f.String())
		}
	}
}

// Errors are one line: the filter, the column of the word at fault and
// what is wrong, with a hint beside.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		col  int
		want string
	}{
		{"dport", 6, "needs a value"},
		{"dport 0", 7, "want 1 to 65535"},
		{"dport 70000", 7, "want 1 to 65535"},
		{"sport > 65535", 9, "no port is above"},
		{"dst nowhere", 5, "want an IP"},
		{"dst 10.0.0.0/33", 5, "want an IP"},
		{"dst >= 10.0.0.1", 8, "compares only with = or !="},
		{"state sleeping", 7, "not a TCP state"},
		{"pid -1", 5, "want a process id"},
		{"colour blue", 1, "unknown word"},
		{"sport :http-alt x", 7, "want 1 to 65535"},
		{"dport 22 or", 12, `a condition must follow "or"`},
		{"dport 22 and", 13, `a condition must follow "and"`},
		{"not", 4, `a condition must follow "not"`},
		{"( dport 22 or sport 22", 23, "the ( at column 1 is never closed"},
		{"dport 22 )", 10, `")" closes nothing`},
		{"( )", 3, "nothing between ( and )"},
		{"or dport 22", 1, `"or" where a condition should be`},
		{"dport 22 or or sport 1", 13, `"or" where a condition should be`},
		{"dport 22 & sport 1", 10, `a lone '&'`},
		{"dport ( 22 )", 7, "needs a value"},
	} {
		_, err := Parse(c.in)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a ParseError", c.in, err)
			continue
		}
		if pe.Col != c.col || !strings.Contains(pe.Msg, c.want) || pe.Hint == "" || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): %q (column %d, hint %q), want column %d and %q", c.in, err, pe.Col, pe.Hint, c.col, c.want)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("column %d:", c.col)) {
			t.Errorf("Parse(%q): %q does not say the column", c.in, err)
		}
	}
}

// The request's state mask: ss's default without a state, the states an
// expression allows when it names some, and "not" reasoned through.
func TestStateMask(t *testing.T) {
	all := uint32(allStates)
	for in, want := range map[string]uint32{
		"":                                          ssDefault,
		"dport 22":                                  ssDefault,
		"state established":                         1 << 1,
		"state established or state time-wait":      1<<1 | 1<<6,
		"state established and dport 22":            1 << 1,
		"not state time-wait":                       all &^ (1 << 6),
		"state established or dport 22":             all, // dport 22 in any state
		"not ( state established and dport 22 )":    all,
		"not ( state established or dport 22 )":     all &^ (1 << 1),
		"state connected and not state established": allButListen &^ (1 << 7) &^ (1 << 3) &^ (1 << 1),
	} {
		f, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.statesOrDefault(); got != want {
			t.Errorf("%q: states %#x, want %#x", in, got, want)
		}
	}
	f, _ := Parse("dport 22")
	if f.ShowAll().statesOrDefault() != all {
		t.Error("ShowAll does not ask for every state")
	}
}

// Where each conjunct goes: ports and addresses to the kernel, states to
// the mask, the rest to user space.
func TestPlan(t *testing.T) {
	for in, want := range map[string][2]int{
		"dport 22 src 10.0.0.0/8":                        {2, 0},
		"( dport 22 or sport 22 ) and state established": {1, 0},
		"dport 22 or state established":                  {0, 1},
		"pid 42 dport 22":                                {1, 1},
		"state established":                              {0, 0},
	} {
		f, _ := Parse(in)
		if len(f.kernel) != want[0] || len(f.user) != want[1] {
			t.Errorf("%q: %d kernel, %d user conjuncts, want %v", in, len(f.kernel), len(f.user), want)
		}
	}
	f, _ := Parse("pid 1 or dport 22")
	if !f.NeedsOwners() {
		t.Error("a pid under or needs no owners")
	}
}

// "or" compiles as ss compiles it: a failed left side jumps to the right
// one, a JMP after the left side accepts.
func TestBytecodeOr(t *testing.T) {
	f, _ := Parse("dport 22 or sport 22")
	bc, err := f.Bytecode()
	if err != nil {
		t.Fatal(err)
	}
	// D_GE, D_LE (8 bytes each, no → the S_GE at 20), JMP (4, no → the
	// end, accept), S_GE, S_LE (no → reject, 4 past the end at 36).
	if len(bc) != 36 {
		t.Fatalf("%d bytes: %x", len(bc), bc)
	}
	for off, want := range map[int][3]int{0: {bcDGE, 8, 20}, 8: {bcDLE, 8, 12}, 16: {bcJmp, 4, 20}, 20: {bcSGE, 8, 20}, 28: {bcSLE, 8, 12}} {
		if int(bc[off]) != want[0] || int(bc[off+1]) != want[1] || int(binary.NativeEndian.Uint16(bc[off+2:])) != want[2] {
			t.Errorf("op at %d = %x, want code %d yes %d no %d", off, bc[off:off+4], want[0], want[1], want[2])
		}
	}
}

// testSock is a socket as the kernel's bytecode sees it: the family and
// the addresses as the socket holds them (IPv4-mapped on an IPv6 one).
type testSock struct {
	family        uint8
	local, remote netip.AddrPort
}

// view is what the filter's Go side reads of s: addresses unmapped, as
// the decoder gives them.
func (s testSock) view() sockView {
	um := func(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }
	return sockView{local: um(s.local), remote: um(s.remote), v6: s.family == 10}
}

// runBC runs bytecode on a socket the way the kernel's inet_diag_bc_run
// does, after checking it as inet_diag_bc_audit does: every "yes" is its
// op's length and every "no" lands on an op reached that way, at the
// exact end (accept) or four bytes past it (reject).
func runBC(t *testing.T, bc []byte, s testSock) bool {
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
		no := int(binary.NativeEndian.Uint16(bc[off+2:]))
		if no < 4 || !starts[off+no] && off+no != len(bc) && off+no != len(bc)+4 {
			t.Fatalf("op at %d: no lands at %d, not on an op", off, off+no)
		}
	}
	off := 0
	for off < len(bc) {
		code := bc[off]
		var yes bool
		switch code {
		case bcJmp:
			yes = false
		case bcSGE, bcSLE, bcDGE, bcDLE:
			port := binary.NativeEndian.Uint16(bc[off+6:])
			sp, dp := s.local.Port(), s.remote.Port()
			yes = map[byte]bool{bcSGE: sp >= port, bcSLE: sp <= port, bcDGE: dp >= port, bcDLE: dp <= port}[code]
		case bcSCond, bcDCond:
			yes = hostcond(bc[off+4:off+int(bc[off+1])], s, code == bcDCond)
		default:
			t.Fatalf("op %d at %d: unknown", code, off)
		}
		if yes {
			off += int(bc[off+1])
		} else {
			off += int(binary.NativeEndian.Uint16(bc[off+2:]))
		}
	}
	return off == len(bc)
}

// hostcond is the kernel's S_COND/D_COND test of struct inet_diag_hostcond.
func hostcond(c []byte, s testSock, dst bool) bool {
	family, bits := c[0], int(c[1])
	port := int32(binary.NativeEndian.Uint32(c[4:]))
	end := s.local
	if dst {
		end = s.remote
	}
	if port != -1 && uint16(port) != end.Port() {
		return false
	}
	addr := end.Addr().AsSlice()
	cond := netip.PrefixFrom(addrOf(c[8:]), bits)
	if family != s.family {
		if s.family == 10 && family == 2 && end.Addr().Is4In6() {
			return cond.Contains(end.Addr().Unmap())
		}
		return false
	}
	if bits == 0 {
		return true
	}
	a, _ := netip.AddrFromSlice(addr)
	return cond.Contains(a)
}

func addrOf(b []byte) netip.Addr {
	if len(b) == 4 {
		return netip.AddrFrom4([4]byte(b))
	}
	return netip.AddrFrom16([16]byte(b))
}

// kernelEval is what the kernel's part of f decides of a socket.
func kernelEval(f Filter, s *sockView) bool {
	for _, c := range f.kernel {
		if !c.eval(s) {
			return false
		}
	}
	return true
}

// The compiled bytecode, run as the kernel runs it, decides every socket
// as the expression does, whole and in the parts of a split dump, for
// random sockets and expressions of ports and addresses.
func TestBytecodeMatchesExpression(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ports := []uint16{22, 80, 443, 1023, 1024, 5201, 46883, 46884, 60000}
	v4 := []string{"10.0.0.1", "10.1.2.3", "192.0.2.7", "127.0.0.1"}
	v6 := []string{"2001:db8::1", "2001:db8:1::2", "::1"}
	term := func() string {
		switch r.IntN(6) {
		case 0, 1:
			return fmt.Sprintf("%s %s %d", []string{"sport", "dport"}[r.IntN(2)], []string{"", "=", "!=", ">=", "<=", ">", "<"}[r.IntN(7)], ports[r.IntN(len(ports))])
		case 2:
			return fmt.Sprintf("%s %s", []string{"src", "dst"}[r.IntN(2)], []string{"10.0.0.0/8", "10.1.0.0/16", "192.0.2.7", "127.0.0.1:5201", "0.0.0.0/0"}[r.IntN(5)])
		case 3:
			return fmt.Sprintf("%s %s", []string{"src", "dst"}[r.IntN(2)], []string{"2001:db8::/32", "[::1]:22", "::/0"}[r.IntN(3)])
		}
		return fmt.Sprintf("%s %d", []string{"sport", "dport"}[r.IntN(2)], ports[r.IntN(len(ports))])
	}
	var expr func(depth int) string
	expr = func(depth int) string {
		if depth == 0 || r.IntN(3) == 0 {
			return term()
		}
		switch r.IntN(4) {
		case 0:
			return expr(depth-1) + " or " + expr(depth-1)
		case 1:
			return expr(depth-1) + " and " + expr(depth-1)
		case 2:
			return "not " + expr(depth-1)
		}
		return "( " + expr(depth-1) + " )"
	}
	sock := func() testSock {
		ap := func(ips []string) netip.AddrPort {
			return netip.AddrPortFrom(netip.MustParseAddr(ips[r.IntN(len(ips))]), ports[r.IntN(len(ports))])
		}
		switch r.IntN(3) {
		case 0:
			return testSock{family: 2, local: ap(v4), remote: ap(v4)}
		case 1:
			return testSock{family: 10, local: ap(v6), remote: ap(v6)}
		}
		m := func(a netip.AddrPort) netip.AddrPort {
			return netip.AddrPortFrom(netip.AddrFrom16(a.Addr().As16()), a.Port())
		}
		return testSock{family: 10, local: m(ap(v4)), remote: m(ap(v4))}
	}
	for range 400 {
		q := expr(4)
		f, err := Parse(q)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		whole, err := f.Bytecode()
		if err != nil {
			t.Fatal(err)
		}
		var parts [2][]byte
		for p := range 2 {
			if parts[p], err = f.partBytecode(p, 2); err != nil {
				t.Fatal(err)
			}
		}
		for range 50 {
			s := sock()
			v := s.view()
			want := f.expr.eval(&v)
			if got := whole == nil || runBC(t, whole, s); got != want {
				t.Fatalf("%q on %v → %v: bytecode %v, expression %v\n%x", q, s.local, s.remote, got, want, whole)
			}
			in := 0
			for p := range 2 {
				if runBC(t, parts[p], s) {
					in++
				}
			}
			if want && in != 1 || !want && in != 0 {
				t.Fatalf("%q on %v → %v: in %d parts, expression %v", q, s.local, s.remote, in, want)
			}
		}
	}
}

// User space decides what the kernel cannot: states beside ports, pids.
func TestKeep(t *testing.T) {
	f, _ := Parse("( dport 22 and state established ) or pid 42")
	s := func(dport uint16, st model.TCPState, pid int) bool {
		return f.keep(netip.MustParseAddrPort("10.0.0.1:40000"), netip.AddrPortFrom(netip.MustParseAddr("10.0.0.2"), dport), false, st, pid)
	}
	if !s(22, model.TCPEstablished, 0) || s(22, model.TCPTimeWait, 0) || !s(80, model.TCPTimeWait, 42) || s(80, model.TCPEstablished, 7) {
		t.Error("keep decides wrongly")
	}
}
