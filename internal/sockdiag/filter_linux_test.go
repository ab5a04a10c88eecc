package sockdiag

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// ssPath is iproute2's ss, "" when it is not installed.
func ssPath() string {
	if p, err := exec.LookPath("ss"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/bin/ss", "/sbin/ss", "/usr/sbin/ss", "/bin/ss"} {
		if _, err := exec.Command(p, "-V").Output(); err == nil {
			return p
		}
	}
	return ""
}

// Real sockets match the filter grammar's expressions as they should, and,
// where iproute2's ss is installed, exactly as ss matches them: the same
// sockets, compared as "local remote" pairs. The test's sockets live on
// addresses of 127/8 of its own, which every filter names, so no other
// program's sockets come and go between the two dumps. ss takes states
// before its expression only; the test gives them there, and to
// tcpscope as "state X and ...".
func TestFiltersOnLoopbackLikeSS(t *testing.T) {
	// Addresses of this run's own: an earlier run's sockets linger in
	// time-wait on its addresses.
	x, y := 1+rand.IntN(250), rand.IntN(250)
	a, b := fmt.Sprintf("127.88.%d.%d", x, y), fmt.Sprintf("127.89.%d.%d", x, y)
	ln, err := net.Listen("tcp", a+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := ln.Addr().(*net.TCPAddr).Port
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(b)}}
	var ports []int
	for range 3 {
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ports = append(ports, c.LocalAddr().(*net.TCPAddr).Port)
	}
	slices.Sort(ports)
	c1, c2 := ports[0], ports[1]
	// The server's three ends have port p, the clients' c1 < c2 < c3.
	if3 := func(ok bool) int {
		if ok {
			return 3
		}
		return 0
	}
	ours := fmt.Sprintf("( src %s or src %s )", a, b)
	cases := []struct {
		expr  string // both grammars
		state string // ss's state argument, and ours as "state X and"
		all   bool
		n     int // sockets it must match
	}{
		{expr: "", n: 6},
		{expr: "", all: true, n: 7}, // the listener too
		{expr: fmt.Sprintf("dport = :%d or sport = :%d", p, p), n: 6},
		{expr: fmt.Sprintf("not dport = :%d", p), n: 3},
		{expr: fmt.Sprintf("not dport = :%d", p), all: true, n: 4},
		{expr: fmt.Sprintf("sport = :%d or dport = :%d", c1, c1), n: 2},
		{expr: fmt.Sprintf("! ( sport = :%d || dport = :%d )", c1, c2), n: 4},
		{expr: fmt.Sprintf("sport > :%d", c1), n: 2 + if3(p > c1)},
		{expr: fmt.Sprintf("sport >= :%d and sport <= :%d", c1, c2), n: 2 + if3(c1 <= p && p <= c2)},
		{expr: fmt.Sprintf("sport < :%d", c2), n: 1 + if3(p < c2)},
		{expr: fmt.Sprintf("sport != :%d and dport != :%d", p, p), n: 0},
		{expr: fmt.Sprintf("dst %s and dport = :%d", a, p), n: 3},
		{expr: fmt.Sprintf("dst %s:%d", a, p), n: 3},
		{expr: fmt.Sprintf("( dst %s or src %s ) && not ( dport = :%d and sport = :%d )", a, b, p, c1), n: 2},
		{expr: fmt.Sprintf("sport = :%d", p), state: "established", n: 3},
		{expr: fmt.Sprintf("sport = :%d", p), state: "listening", n: 1},
		{expr: fmt.Sprintf("sport = :%d", p), state: "connected", n: 3},
	}
	conn, err := Open(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ss := ssPath()
	if ss == "" {
		t.Log("ss is not installed: the filters are checked on their own, not against ss")
	}
	for _, c := range cases {
		q := ours
		if c.expr != "" {
			q += " and ( " + c.expr + " )"
		}
		if c.state != "" {
			q = "state " + c.state + " and " + q
		}
		f, err := Parse(q)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if c.all {
			f = f.ShowAll()
		}
		socks, err := conn.List(f, 0, nil)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		var got []string
		for _, s := range socks {
			got = append(got, s.Local.String()+" "+s.Remote.String())
		}
		slices.Sort(got)
		if len(got) != c.n {
			t.Errorf("%q (all %v): %d sockets, want %d: %v", q, c.all, len(got), c.n, got)
		}
		if ss == "" {
			continue
		}
		args := []string{"-tnH"}
		if c.all {
			args[0] = "-tanH"
		}
		if c.state != "" {
			args = append(args, "state", c.state)
		}
		ssq := ours
		if c.expr != "" {
			ssq += " and ( " + c.expr + " )"
		}
		out, err := exec.Command(ss, append(args, ssq)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ss %v %q: %v\n%s", args, ssq, err, out)
		}
		var want []string
		for line := range strings.Lines(string(out)) {
			// [State] Recv-Q Send-Q Local Peer: ss leaves the state
			// out when given one.
			if w := strings.Fields(line); len(w) >= 4 {
				want = append(want, strings.Replace(w[len(w)-2]+" "+w[len(w)-1], "*", "0", 1))
			}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q (all %v): tcpscope matches %v, ss %v %q matches %v", q, c.all, got, args, ssq, want)
		}
	}
}
