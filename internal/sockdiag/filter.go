package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Filter selects sockets: every condition must hold.
type Filter struct {
	// States is a bit mask of TCP states (1 << state); 0 means ss's
	// default (every state but listen, syn-recv, time-wait and closed),
	// or every state after ShowAll.
	States uint32
	// Conds are port and address conditions, compiled to bytecode.
	Conds []Cond
	// PIDs, when set, keep only sockets one of these processes holds.
	PIDs []int
	text string
	all  bool
}

// ShowAll makes a filter that names no state match sockets in every state,
// as ss -a: listeners and time-wait too.
func (f Filter) ShowAll() Filter {
	f.all = true
	return f
}

// String is the filter as parsed.
func (f Filter) String() string { return f.text }

// Cond is one port or address condition.
type Cond struct {
	// Dst: the remote end (dport, dst); otherwise the local end.
	Dst bool
	// Port, when non-zero, must equal the end's port.
	Port uint16
	// Prefix, when valid, must contain the end's address.
	Prefix netip.Prefix
}

// tcpStates names the kernel's TCP states as ss does.
func tcpStates() map[string]model.TCPState {
	return map[string]model.TCPState{
		"established": 1, "syn-sent": 2, "syn-recv": 3, "fin-wait-1": 4, "fin-wait-2": 5,
		"time-wait": 6, "closed": 7, "close-wait": 8, "last-ack": 9, "listening": 10, "listen": 10, "closing": 11,
	}
}

// allButListen is every state except LISTEN.
const allButListen = (1<<12 - 1) &^ (1 << 10) &^ 1

// ssDefault is ss's default without -a (its SS_CONN): every state but
// listen, syn-recv, time-wait and closed. A host's list is otherwise
// mostly time-wait rows, and the kernel leaves them out of the dump.
const ssDefault = allButListen &^ (1 << 3) &^ (1 << 6) &^ (1 << 7)

// allStates is every state, TCP_ESTABLISHED (1) to TCP_CLOSING (11).
const allStates = (1<<12 - 1) &^ 1

// Parse reads a filter in ss's words: terms joined by spaces or "and":
//
//	dport 22 · sport 443 · dport :443 · dst 10.0.0.0/8 · src 192.0.2.7
//	dst 10.0.0.1:5201 · state established · state connected · pid 4711
//
// An empty string matches every connection ss lists without -a: every
// state but listen, syn-recv, time-wait and closed.
func Parse(s string) (Filter, error) {
	f := Filter{text: strings.TrimSpace(s)}
	words := strings.Fields(strings.NewReplacer("=", " ", "==", " ").Replace(s))
	for i := 0; i < len(words); i++ {
		w := strings.ToLower(words[i])
		if w == "and" || w == "&&" {
			continue
		}
		if i+1 >= len(words) {
			return f, fmt.Errorf("filter %q: %q needs a value", s, w)
		}
		v := words[i+1]
		i++
		switch w {
		case "dport", "sport":
			p, err := parsePort(v)
			if err != nil {
				return f, fmt.Errorf("filter %q: %w", s, err)
			}
			f.Conds = append(f.Conds, Cond{Dst: w == "dport", Port: p})
		case "dst", "src", "daddr", "saddr":
			c, err := parseAddr(v)
			if err != nil {
				return f, fmt.Errorf("filter %q: %w", s, err)
			}
			c.Dst = w == "dst" || w == "daddr"
			f.Conds = append(f.Conds, c)
		case "state":
			m, err := parseState(v)
			if err != nil {
				return f, fmt.Errorf("filter %q: %w", s, err)
			}
			f.States |= m
		case "pid":
			pid, err := strconv.Atoi(v)
			if err != nil || pid <= 0 {
				return f, fmt.Errorf("filter %q: pid %q: want a process id", s, v)
			}
			f.PIDs = append(f.PIDs, pid)
		default:
			return f, fmt.Errorf("filter %q: unknown word %q (want dport, sport, dst, src, state, pid)", s, w)
		}
	}
	return f, nil
}

func parsePort(v string) (uint16, error) {
	n, err := strconv.ParseUint(strings.TrimPrefix(v, ":"), 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q: want 1 to 65535", v)
	}
	return uint16(n), nil
}

func parseAddr(v string) (Cond, error) {
	if ap, err := netip.ParseAddrPort(v); err == nil {
		a := ap.Addr().Unmap()
		return Cond{Port: ap.Port(), Prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	if p, err := netip.ParsePrefix(v); err == nil {
		return Cond{Prefix: p.Masked()}, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(v, "[]")); err == nil {
		a = a.Unmap()
		return Cond{Prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	return Cond{}, fmt.Errorf("address %q: want an IP, a prefix (10.0.0.0/8) or IP:PORT", v)
}

func parseState(v string) (uint32, error) {
	v = strings.ToLower(v)
	switch v {
	case "all":
		return (1<<12 - 1) &^ 1, nil
	case "connected": // everything but listen and closed, as ss
		return allButListen &^ (1 << 7) &^ (1 << 3), nil
	case "synchronized":
		return allButListen &^ (1 << 7) &^ (1 << 2) &^ (1 << 3), nil
	}
	st, ok := tcpStates()[v]
	if !ok {
		return 0, fmt.Errorf("state %q: want established, syn-sent, fin-wait-1, time-wait, close-wait, listening, connected, all, ...", v)
	}
	return 1 << st, nil
}

// v6Only reports whether an address condition can match only IPv6
// sockets: an IPv6 prefix never matches an IPv4 socket, while an IPv4 one
// also matches IPv4-mapped addresses on IPv6 sockets.
func (f Filter) v6Only() bool {
	for _, c := range f.Conds {
		if c.Prefix.IsValid() && c.Prefix.Addr().Is6() {
			return true
		}
	}
	return false
}

// ErrUnsupported: sock_diag needs Linux.
var ErrUnsupported = errors.New("sockdiag: needs Linux")

// statesOrDefault is the request's state mask.
func (f Filter) statesOrDefault() uint32 {
	switch {
	case f.States == 0 && f.all:
		return allStates
	case f.States == 0:
		return ssDefault
	}
	return f.States
}

// Bytecode compiles the port and address conditions to inet_diag
// bytecode (INET_DIAG_REQ_BYTECODE): one test after another, each jumping
// past the end of the program on failure, so a socket is accepted only
// when every test passes. Nil when there are no conditions.
func (f Filter) Bytecode() ([]byte, error) {
	prog, err := f.ops()
	if err != nil || len(prog) == 0 {
		return nil, err
	}
	return assemble(prog), nil
}

// partBytecode is Bytecode for part of parts of the matching sockets (see
// split): the conditions, then the part's port test. A dump per part finds
// every matching socket exactly once.
func (f Filter) partBytecode(part, parts int) ([]byte, error) {
	prog, err := f.ops()
	if err != nil {
		return nil, err
	}
	if parts > 1 {
		prog = append(prog, split(part, len(prog))...)
	}
	if len(prog) == 0 {
		return nil, nil
	}
	return assemble(prog), nil
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

// ops compiles the conditions, each test rejecting on failure.
func (f Filter) ops() ([]bcOp, error) {
	var prog []bcOp
	for _, c := range f.Conds {
		switch {
		case c.Prefix.IsValid():
			a := c.Prefix.Addr()
			family, port := uint8(2), int32(-1) // AF_INET; -1: any port
			if a.Is6() {
				family = 10
			}
			if c.Port != 0 {
				port = int32(c.Port)
			}
			raw := a.AsSlice()
			op := byte(bcSCond)
			if c.Dst {
				op = bcDCond
			}
			// The op, then struct inet_diag_hostcond: u8 family, u8
			// prefix_len, two bytes of padding, int port, the address
			// in network order.
			b := make([]byte, 4+8+len(raw))
			b[0] = op
			b[4], b[5] = family, byte(c.Prefix.Bits())
			binary.NativeEndian.PutUint32(b[8:], uint32(port))
			copy(b[12:], raw)
			prog = append(prog, bcOp{b, bcReject})
		case c.Port != 0:
			ge, le := byte(bcSGE), byte(bcSLE)
			if c.Dst {
				ge, le = bcDGE, bcDLE
			}
			prog = append(prog, bcOp{portOp(ge, c.Port), bcReject}, bcOp{portOp(le, c.Port), bcReject})
		default:
			return nil, errors.New("sockdiag: empty condition")
		}
	}
	return prog, nil
}

// assemble lays the operations out and fills in their jumps, relative to
// each operation: "yes" is the operation's own length (the kernel checks
// that every jump lands on an operation reached that way), "no" lands on
// its target. The program accepts a socket that runs off its exact end;
// past it (+4) rejects.
func assemble(prog []bcOp) []byte {
	at := make([]int, len(prog)+1)
	for i, op := range prog {
		at[i+1] = at[i] + len(op.b)
	}
	total := at[len(prog)]
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
	return out
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
