package sockdiag

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ParseError is a filter that does not parse: where, what, and a hint.
type ParseError struct {
	Filter string
	// Col is the 1-based column of the word at fault (one past the end
	// when the filter ended too soon).
	Col  int
	Msg  string
	Hint string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("filter %q, column %d: %s", e.Filter, e.Col, e.Msg)
}

// filterHint is the grammar in one line, the hint of most errors.
const filterHint = `'( dport 22 or sport 22 ) and not src 10.0.0.0/8'`

// Parse reads a filter in ss's grammar: conditions
//
//	dport 22 · sport 443 · dport = :443 · sport >= 1024 · dport != 22
//	dst 10.0.0.0/8 · src 192.0.2.7 · dst 10.0.0.1:5201 · dst [::1]:22
//	state established · state connected · pid 4711
//
// joined by "and" (or "&&", or nothing), "or" ("||"), "not" ("!") and
// parentheses; "not" binds tightest, then "and", then "or", as in ss.
// Port comparisons are =, ==, eq; !=, ne, neq; >=, ge; <=, le; >, gt;
// <, lt. Unlike ss, "state" may stand anywhere in the expression
// (ss takes it before the expression only). An empty string matches
// every connection ss lists without -a: every state but listen,
// syn-recv, time-wait and closed.
func Parse(s string) (Filter, error) {
	f := Filter{text: strings.TrimSpace(s)}
	toks, err := tokenize(s)
	if err != nil {
		return f, err
	}
	p := &parser{src: s, toks: toks}
	if len(toks) > 0 {
		if f.expr, err = p.or(); err != nil {
			return f, err
		}
		if t, ok := p.peek(); ok {
			if t.text == ")" {
				return f, p.errAt(t, `")" closes nothing`, "remove it, or open it with (")
			}
			return f, p.errAt(t, fmt.Sprintf("%q cannot follow a condition here", t.text), filterHint)
		}
	}
	f.plan()
	return f, nil
}

// token is a word or an operator, and where it begins in the filter.
type token struct {
	text string
	pos  int
}

// tokenize splits a filter into words and operators: ( ) ! && || and the
// comparisons, which need no spaces around them.
func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
			continue
		case c == '(' || c == ')':
			out = append(out, token{s[i : i+1], i})
			i++
			continue
		}
		for _, op := range []string{"&&", "||", "!=", "==", ">=", "<=", "!", "=", ">", "<"} {
			if strings.HasPrefix(s[i:], op) {
				out = append(out, token{op, i})
				i += len(op)
				goto next
			}
		}
		if c == '&' || c == '|' {
			return nil, &ParseError{Filter: s, Col: i + 1, Msg: fmt.Sprintf("a lone %q", c),
				Hint: `"and" (&&) or "or" (||)`}
		}
		{
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n()!&|=<>", rune(s[j])) {
				j++
			}
			out = append(out, token{s[i:j], i})
			i = j
		}
	next:
	}
	return out, nil
}

// parser reads tokens by recursive descent, one function a precedence
// level.
type parser struct {
	src  string
	toks []token
	i    int
}

func (p *parser) peek() (token, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return token{}, false
}

// word is the next token lower-cased, "" at the end.
func (p *parser) word() string {
	t, _ := p.peek()
	return strings.ToLower(t.text)
}

func (p *parser) errAt(t token, msg, hint string) error {
	return &ParseError{Filter: p.src, Col: t.pos + 1, Msg: msg, Hint: hint}
}

// errEnd is a filter that ended where more was needed.
func (p *parser) errEnd(msg, hint string) error {
	return &ParseError{Filter: p.src, Col: len(p.src) + 1, Msg: msg, Hint: hint}
}

// or := and { ("or" | "||") and }
func (p *parser) or() (*node, error) {
	n, err := p.and()
	for err == nil && (p.word() == "or" || p.word() == "||") {
		p.i++
		var m *node
		if m, err = p.operand(`"`+p.toks[p.i-1].text+`"`, p.and); err == nil {
			n = &node{kind: nOr, a: n, b: m}
		}
	}
	return n, err
}

// and := not { ["and" | "&&"] not }
func (p *parser) and() (*node, error) {
	n, err := p.not()
	for err == nil {
		w := p.word()
		switch w {
		case "", "or", "||", ")":
			return n, nil
		}
		var m *node
		if w == "and" || w == "&&" {
			p.i++
			m, err = p.operand(`"`+p.toks[p.i-1].text+`"`, p.not)
		} else {
			m, err = p.not()
		}
		if err == nil {
			n = &node{kind: nAnd, a: n, b: m}
		}
	}
	return n, err
}

// operand is what an operator takes after it, read by next: it must
// come.
func (p *parser) operand(after string, next func() (*node, error)) (*node, error) {
	if _, ok := p.peek(); !ok {
		return nil, p.errEnd("a condition must follow "+after, filterHint)
	}
	return next()
}

// not := ("not" | "!") not | "(" or ")" | condition
func (p *parser) not() (*node, error) {
	t, ok := p.peek()
	if !ok {
		return nil, p.errEnd("a condition is missing", filterHint)
	}
	switch strings.ToLower(t.text) {
	case "not", "!":
		p.i++
		n, err := p.operand(fmt.Sprintf("%q", t.text), p.not)
		if err != nil {
			return nil, err
		}
		return &node{kind: nNot, a: n}, nil
	case "(":
		p.i++
		if p.word() == ")" {
			return nil, p.errAt(p.toks[p.i], "nothing between ( and )", filterHint)
		}
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.word() != ")" {
			if u, ok := p.peek(); ok {
				return nil, p.errAt(u, fmt.Sprintf("%q where the ( at column %d should close", u.text, t.pos+1), filterHint)
			}
			return nil, p.errEnd(fmt.Sprintf("the ( at column %d is never closed", t.pos+1), "'( dport 22 or sport 22 )'")
		}
		p.i++
		return n, nil
	case ")":
		return nil, p.errAt(t, `")" where a condition should be`, filterHint)
	case "and", "&&", "or", "||":
		return nil, p.errAt(t, fmt.Sprintf("%q where a condition should be", t.text), filterHint)
	}
	return p.cond()
}

// cond := ("dport" | "sport") [CMP] PORT | ("dst" | "src" | "daddr" |
// "saddr") [= | == | eq | != | ne | neq] ADDR | "state" NAME | "pid" N
func (p *parser) cond() (*node, error) {
	t := p.toks[p.i]
	w := strings.ToLower(t.text)
	p.i++
	switch w {
	case "dport", "sport", "dst", "src", "daddr", "saddr", "state", "pid":
	default:
		return nil, p.errAt(t, fmt.Sprintf("unknown word %q (want dport, sport, dst, src, state, pid)", t.text), filterHint)
	}
	op := "="
	if c := p.word(); isCmp(c) {
		op = c
		p.i++
	}
	v, ok := p.peek()
	if !ok || v.text == "(" || v.text == ")" || isCmp(strings.ToLower(v.text)) {
		msg := fmt.Sprintf("%q needs a value", w)
		if !ok {
			return nil, p.errEnd(msg, filterHint)
		}
		return nil, p.errAt(v, msg, filterHint)
	}
	p.i++
	bad := func(msg, hint string) (*node, error) { return nil, p.errAt(v, msg, hint) }
	dst := w == "dport" || w == "dst" || w == "daddr"
	if w != "dport" && w != "sport" && op != "=" && op != "==" && op != "eq" && !isNe(op) {
		return bad(fmt.Sprintf("%q compares only with = or !=", w), filterHint)
	}
	var n *node
	switch w {
	case "dport", "sport":
		num, err := strconv.ParseUint(strings.TrimPrefix(v.text, ":"), 10, 16)
		if err != nil {
			return bad(fmt.Sprintf("port %q: want 1 to 65535", v.text), "a port number: dport 22, sport = :443")
		}
		port := uint16(num)
		n = &node{kind: nPort, dst: dst, port: port}
		switch op {
		case ">=", "ge":
			n.cmp = cmpGE
		case "<=", "le":
			n.cmp = cmpLE
		case ">", "gt":
			if port == 65535 {
				return bad("no port is above 65535", "sport >= 1024")
			}
			n.cmp, n.port = cmpGE, port+1
		case "<", "lt":
			if port == 0 {
				return bad("no port is below 0", "sport < 1024")
			}
			n.cmp, n.port = cmpLE, port-1
		default:
			if port == 0 {
				return bad(fmt.Sprintf("port %q: want 1 to 65535", v.text), "a port number: dport 22, sport = :443")
			}
		}
	case "dst", "src", "daddr", "saddr":
		var err error
		if n, err = parseAddr(v.text); err != nil {
			return bad(err.Error(), "dst 10.0.0.0/8, src 192.0.2.7, dst 10.0.0.1:5201, dst [2001:db8::1]:80")
		}
		n.dst = dst
	case "state":
		m, err := parseState(v.text)
		if err != nil {
			return bad(err.Error(), "ss's names: state established, time-wait, close-wait, listening, connected, all, ...")
		}
		n = &node{kind: nState, states: m}
	case "pid":
		pid, err := strconv.Atoi(v.text)
		if err != nil || pid <= 0 {
			return bad(fmt.Sprintf("pid %q: want a process id", v.text), "pid 4711")
		}
		n = &node{kind: nPID, pid: pid}
	}
	if isNe(op) {
		n = &node{kind: nNot, a: n}
	}
	return n, nil
}

func isCmp(w string) bool {
	switch w {
	case "=", "==", "eq", "!=", "ne", "neq", ">=", "ge", "<=", "le", ">", "gt", "<", "lt":
		return true
	}
	return false
}

func isNe(op string) bool { return op == "!=" || op == "ne" || op == "neq" }

func parseAddr(v string) (*node, error) {
	if ap, err := netip.ParseAddrPort(v); err == nil {
		a := ap.Addr().Unmap()
		return &node{kind: nAddr, port: ap.Port(), prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	if p, err := netip.ParsePrefix(v); err == nil {
		return &node{kind: nAddr, prefix: p.Masked()}, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(v, "[]")); err == nil {
		a = a.Unmap()
		return &node{kind: nAddr, prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	return nil, fmt.Errorf("address %q: want an IP, a prefix (10.0.0.0/8) or IP:PORT", v)
}

func parseState(v string) (uint32, error) {
	v = strings.ToLower(v)
	switch v {
	case "all":
		return allStates, nil
	case "connected": // everything but listen and closed, as ss
		return allButListen &^ (1 << 7) &^ (1 << 3), nil
	case "synchronized":
		return allButListen &^ (1 << 7) &^ (1 << 2) &^ (1 << 3), nil
	case "bucket": // ss: the minisockets
		return 1<<3 | 1<<6, nil
	case "big":
		return allStates &^ (1<<3 | 1<<6), nil
	}
	st, ok := tcpStates()[v]
	if !ok {
		return 0, fmt.Errorf("state %q: not a TCP state", v)
	}
	return 1 << st, nil
}
