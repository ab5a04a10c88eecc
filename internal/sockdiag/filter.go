package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Filter selects sockets by an ss-style expression (see Parse). The
// kernel does what it can: the states the expression allows become the
// dump request's state mask, and its top-level conjuncts of ports and
// addresses alone become inet_diag bytecode, so only matching sockets
// cross into user space. The kernel's bytecode tests no state or owner:
// a conjunct with a pid, or a state beside a port or address (state
// established or dport 22), is checked here, after the dump.
type Filter struct {
	// expr is the whole expression; nil matches every socket.
	expr *node
	// kernel are the top-level conjuncts compiled to bytecode; user those
	// checked after the dump.
	kernel, user []*node
	// named: the expression names a state, so ss's default states do
	// not apply.
	named bool
	text  string
	all   bool
}

// ShowAll makes a filter that names no state match sockets in every state,
// as ss -a: listeners and time-wait too.
func (f Filter) ShowAll() Filter {
	f.all = true
	return f
}

// String is the filter as given.
func (f Filter) String() string { return f.text }

// NeedsOwners reports a filter with a pid condition: the sockets' owners
// must be looked up (Procs) for it to match anything.
func (f Filter) NeedsOwners() bool { return f.expr.has(func(n *node) bool { return n.kind == nPID }) }

// nodeKind is what a node of a filter expression is.
type nodeKind uint8

const (
	nPort  nodeKind = iota // a port comparison
	nAddr                  // an address in a prefix, perhaps with a port
	nState                 // the socket's state in a set
	nPID                   // a process holds the socket
	nAnd
	nOr
	nNot
)

// portCmp is a port comparison as the kernel's bytecode has them.
type portCmp uint8

const (
	cmpEq portCmp = iota
	cmpGE
	cmpLE
)

// node is one term of a filter expression, or an operator over its
// operands a (and b).
type node struct {
	kind nodeKind
	// dst: the remote end (dport, dst); otherwise the local end.
	dst    bool
	cmp    portCmp
	port   uint16 // nPort; for nAddr, 0 is any port
	prefix netip.Prefix
	states uint32 // nState: a mask of 1 << state
	pid    int
	a, b   *node
}

// has reports whether a node of n's tree satisfies f.
func (n *node) has(f func(*node) bool) bool {
	return n != nil && (f(n) || n.a.has(f) || n.b.has(f))
}

// sockView is what a filter reads of a socket.
type sockView struct {
	local, remote netip.AddrPort
	v6            bool // an IPv6 socket, its IPv4-mapped addresses unmapped
	state         model.TCPState
	pid           int
}

// eval is n on one socket, as the kernel's bytecode decides it for ports
// and addresses: an IPv4 prefix also matches an IPv4-mapped address on an
// IPv6 socket, and an IPv6 prefix sees that address mapped (::/0 matches
// it), never an IPv4 socket's.
func (n *node) eval(s *sockView) bool {
	end := s.local
	if n.dst {
		end = s.remote
	}
	switch n.kind {
	case nPort:
		switch n.cmp {
		case cmpGE:
			return end.Port() >= n.port
		case cmpLE:
			return end.Port() <= n.port
		}
		return end.Port() == n.port
	case nAddr:
		a := end.Addr().Unmap()
		if n.prefix.Addr().Is6() {
			if !s.v6 {
				return false
			}
			a = netip.AddrFrom16(a.As16())
		}
		return n.prefix.Contains(a) && (n.port == 0 || end.Port() == n.port)
	case nState:
		return n.states&(1<<s.state) != 0
	case nPID:
		return s.pid == n.pid
	case nAnd:
		return n.a.eval(s) && n.b.eval(s)
	case nOr:
		return n.a.eval(s) || n.b.eval(s)
	case nNot:
		return !n.a.eval(s)
	}
	return false
}

// possible is the states a socket matching n may be in: every state, but
// for what its state terms rule out. certain is the states in which n
// holds whatever else the socket is. Together they give the request's
// state mask for any expression, "not" included.
func (n *node) possible() uint32 {
	switch n.kind {
	case nState:
		return n.states
	case nAnd:
		return n.a.possible() & n.b.possible()
	case nOr:
		return n.a.possible() | n.b.possible()
	case nNot:
		return allStates &^ n.a.certain()
	}
	return allStates
}

func (n *node) certain() uint32 {
	switch n.kind {
	case nState:
		return n.states
	case nAnd:
		return n.a.certain() & n.b.certain()
	case nOr:
		return n.a.certain() | n.b.certain()
	case nNot:
		return allStates &^ n.a.possible()
	}
	return 0
}

// v6Only reports a node only IPv6 sockets can match: an IPv6 prefix never
// matches an IPv4 socket, while an IPv4 one also matches IPv4-mapped
// addresses on IPv6 sockets.
func (n *node) v6Only() bool {
	switch n.kind {
	case nAddr:
		return n.prefix.Addr().Is6()
	case nAnd:
		return n.a.v6Only() || n.b.v6Only()
	case nOr:
		return n.a.v6Only() && n.b.v6Only()
	}
	return false
}

// conjuncts are n's top-level "and" operands, in order.
func (n *node) conjuncts() []*node {
	if n == nil {
		return nil
	}
	if n.kind == nAnd {
		return append(n.a.conjuncts(), n.b.conjuncts()...)
	}
	return []*node{n}
}

// plan divides f's expression between the kernel and user space.
func (f *Filter) plan() {
	f.named = f.expr.has(func(n *node) bool { return n.kind == nState })
	for _, c := range f.expr.conjuncts() {
		stateOnly := !c.has(func(n *node) bool { return n.kind != nState && n.kind < nAnd })
		netOnly := !c.has(func(n *node) bool { return n.kind == nState || n.kind == nPID })
		switch {
		case netOnly:
			f.kernel = append(f.kernel, c)
		case !stateOnly:
			f.user = append(f.user, c)
		}
		// A conjunct of states alone is the state mask's (statesOrDefault).
	}
}

// tcpStates names the kernel's TCP states as ss does.
func tcpStates() map[string]model.TCPState {
	return map[string]model.TCPState{
		"established": 1, "syn-sent": 2, "syn-recv": 3, "fin-wait-1": 4, "fin-wait-2": 5,
		"time-wait": 6, "closed": 7, "close-wait": 8, "last-ack": 9, "listening": 10, "listen": 10, "closing": 11,
	}
}

// allButListen is every state except LISTEN.
const allButListen = allStates &^ (1 << 10)

// ssDefault is ss's default without -a (its SS_CONN): every state but
// listen, syn-recv, time-wait and closed. A host's list is otherwise
// mostly time-wait rows, and the kernel leaves them out of the dump.
const ssDefault = allButListen &^ (1 << 3) &^ (1 << 6) &^ (1 << 7)

// allStates is every state, TCP_ESTABLISHED (1) to TCP_CLOSING (11).
const allStates = (1<<12 - 1) &^ 1

// ErrUnsupported: sock_diag needs Linux.
var ErrUnsupported = errors.New("sockdiag: needs Linux")

// v6Only reports a filter only IPv6 sockets can match.
func (f Filter) v6Only() bool {
	return slices.ContainsFunc(f.kernel, (*node).v6Only) || slices.ContainsFunc(f.user, (*node).v6Only)
}

// statesOrDefault is the request's state mask: the states the expression
// allows, among ss's default ones when it names none and ShowAll was not
// asked for.
func (f Filter) statesOrDefault() uint32 {
	base := uint32(ssDefault)
	if f.named || f.all {
		base = allStates
	}
	if f.expr == nil {
		return base
	}
	return base & f.expr.possible()
}

// keep reports whether a socket the kernel matched passes the conjuncts
// checked in user space.
func (f Filter) keep(local, remote netip.AddrPort, v6 bool, state model.TCPState, pid int) bool {
	s := sockView{local, remote, v6, state, pid}
	for _, c := range f.user {
		if !c.eval(&s) {
			return false
		}
	}
	return true
}

// Bytecode compiles the port and address conditions to inet_diag
// bytecode (INET_DIAG_REQ_BYTECODE), "and", "or" and "not" as jumps (see
// asm.gen). Nil when there are none.
func (f Filter) Bytecode() ([]byte, error) {
	return f.partBytecode(0, 1)
}

// partBytecode is Bytecode for part of parts of the matching sockets (see
// split): the conditions, then the part's port test. A dump per part finds
// every matching socket exactly once.
func (f Filter) partBytecode(part, parts int) ([]byte, error) {
	prog := f.ops()
	if parts > 1 {
		prog = append(prog, split(part, len(prog))...)
	}
	if len(prog) == 0 {
		return nil, nil
	}
	return assemble(prog)
}

// splitPort divides the port space for split: the middle of Linux's
// default ephemeral range (32768–60999), where the ports a host picks for
// its own connections, and the ports of its clients, spread evenly.
const splitPort = 46884

// split is the test that puts a socket in part 0 or 1 of a dump split in
// two: part 0 holds the sockets with exactly one port below splitPort,
// part 1 those with both or neither. One end of most connections has a
// port picked at random from an ephemeral range (the local one for a
// client, the remote one for a server), so the parts come out about even
// on any host. Each socket is in one part whatever its ports: how even the
// parts are only decides how much running them side by side saves.
//
// In bytecode, part 0 is
//
//	(sport ≤ splitPort−1 and dport ≥ splitPort) or (sport ≥ splitPort and dport ≤ splitPort−1)
//
// with the "or" as ss compiles it: a failed test of the first pair jumps
// to the second, and a JMP between them (which always takes its "no"
// branch) accepts when the first pair held.
//
// The operations come after base others, which their jumps skip.
func split(part, base int) []bcOp {
	lo, hi := byte(bcDGE), byte(bcDLE)
	if part == 1 {
		lo, hi = bcDLE, bcDGE
	}
	// Indices past base: 0, 1 the first pair; 2 the JMP; 3, 4 the
	// second pair.
	return []bcOp{
		{portOp(bcSLE, splitPort-1), base + 3},
		{portOp(lo, portFor(lo)), base + 3},
		{[]byte{bcJmp, 4, 0, 0}, bcAccept},
		{portOp(bcSGE, splitPort), bcReject},
		{portOp(hi, portFor(hi)), bcReject},
	}
}

// portFor is the bound a port test of split compares with: ≥ splitPort,
// or ≤ splitPort−1.
func portFor(op byte) uint16 {
	if op == bcDGE || op == bcSGE {
		return splitPort
	}
	return splitPort - 1
}

// bcOp is one bytecode operation and where it jumps when its test fails:
// bcReject, bcAccept, or the index of another operation after it (ss's
// way to compile "or"). On success it goes on to the next one.
type bcOp struct {
	b  []byte
	no int
}

// Targets of a failed test, beside the index of an operation.
const (
	bcReject = -1
	bcAccept = -2
)

// ops compiles the kernel's conjuncts, one after the other: each falls
// through when it holds and rejects the socket when it does not.
func (f Filter) ops() []bcOp {
	var a asm
	for _, c := range f.kernel {
		a.gen(c, bcReject)
	}
	for i := range a.ops {
		if l := a.ops[i].no; l >= 0 {
			a.ops[i].no = a.labels[l]
		}
	}
	return a.ops
}

// asm emits bytecode operations whose failure targets are labels (or
// bcReject), placed later at an operation's index; ops resolves them.
type asm struct {
	ops    []bcOp
	labels []int
}

func (a *asm) label() int {
	a.labels = append(a.labels, -1)
	return len(a.labels) - 1
}

// place puts label l at the next operation emitted (or the end).
func (a *asm) place(l int) { a.labels[l] = len(a.ops) }

func (a *asm) emit(b []byte, no int) { a.ops = append(a.ops, bcOp{b, no}) }

// jmp always goes to label to: a JMP takes its "no" branch.
func (a *asm) jmp(to int) { a.emit([]byte{bcJmp, 4, 0, 0}, to) }

// gen emits n: the program goes on past n's code when n holds and jumps to
// no when it does not, as ss compiles its filters. The kernel's tests
// only fall through on success and jump forward on failure, so
//
//	a and b:  a (no → no), b (no → no)
//	a or b:   a (no → R), JMP → E, R: b (no → no), E:
//	not a:    a (no → E), JMP → no, E:
func (a *asm) gen(n *node, no int) {
	switch n.kind {
	case nAnd:
		a.gen(n.a, no)
		a.gen(n.b, no)
	case nOr:
		right, end := a.label(), a.label()
		a.gen(n.a, right)
		a.jmp(end)
		a.place(right)
		a.gen(n.b, no)
		a.place(end)
	case nNot:
		end := a.label()
		a.gen(n.a, end)
		a.jmp(no)
		a.place(end)
	case nPort:
		ge, le := byte(bcSGE), byte(bcSLE)
		if n.dst {
			ge, le = bcDGE, bcDLE
		}
		if n.cmp != cmpLE {
			a.emit(portOp(ge, n.port), no)
		}
		if n.cmp != cmpGE {
			a.emit(portOp(le, n.port), no)
		}
	case nAddr:
		p := n.prefix.Addr()
		family, port := uint8(2), int32(-1) // AF_INET; -1: any port
		if p.Is6() {
			family = 10
		}
		if n.port != 0 {
			port = int32(n.port)
		}
		raw := p.AsSlice()
		op := byte(bcSCond)
		if n.dst {
			op = bcDCond
		}
		// The op, then struct inet_diag_hostcond: u8 family, u8
		// prefix_len, two bytes of padding, int port, the address in
		// network order.
		b := make([]byte, 4+8+len(raw))
		b[0] = op
		b[4], b[5] = family, byte(n.prefix.Bits())
		binary.NativeEndian.PutUint32(b[8:], uint32(port))
		copy(b[12:], raw)
		a.emit(b, no)
	}
}

// assemble lays the operations out and fills in their jumps, relative to
// each operation: "yes" is the operation's own length (the kernel checks
// that every jump lands on an operation reached that way), "no" lands on
// its target. The program accepts a socket that runs off its exact end;
// past it (+4) rejects.
func assemble(prog []bcOp) ([]byte, error) {
	at := make([]int, len(prog)+1)
	for i, op := range prog {
		at[i+1] = at[i] + len(op.b)
	}
	total := at[len(prog)]
	if total+4 > 0xffff {
		// Jumps are 16 bits.
		return nil, fmt.Errorf("filter: %d bytes of bytecode, more than the kernel's jumps reach", total)
	}
	out := make([]byte, 0, total)
	for i, op := range prog {
		target := op.no
		switch op.no {
		case bcReject:
			target = total + 4
		case bcAccept:
			target = total
		default:
			target = at[op.no]
		}
		b := op.b
		b[1] = byte(len(b))
		binary.NativeEndian.PutUint16(b[2:], uint16(target-at[i]))
		out = append(out, b...)
	}
	return out, nil
}

// inet_diag bytecode operations (linux/inet_diag.h).
const (
	bcJmp   = 1
	bcSGE   = 2
	bcSLE   = 3
	bcDGE   = 4
	bcDLE   = 5
	bcSCond = 7
	bcDCond = 8
)

// portOp is a port comparison: the op, then a second op whose "no" field
// carries the port.
func portOp(op byte, port uint16) []byte {
	b := make([]byte, 8)
	b[0] = op
	binary.NativeEndian.PutUint16(b[4+2:], port)
	return b
}
