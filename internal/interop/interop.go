package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Way is which program is the client and which the server.
type Way string

// The ways a case runs.
const (
	// StockToTcpscope: a stock iperf3 client against `tcpscope server`.
	StockToTcpscope Way = "iperf3 → tcpscope"
	// TcpscopeToStock: `tcpscope test --iperf3` against `iperf3 -s`.
	TcpscopeToStock Way = "tcpscope → iperf3"
	// Reference: stock against stock, what the other two are held to.
	Reference Way = "iperf3 → iperf3"
)

// Ways lists them in the order a round runs them.
var Ways = []Way{StockToTcpscope, TcpscopeToStock, Reference}

// Case is one iperf3 mode: the client's flags in iperf3's spelling.
type Case struct {
	Name string
	Args []string
	// IPv6 runs it over ::1 (the servers listen on both loopbacks).
	IPv6 bool
	// Clients > 1 starts that many clients at once from this host, the
	// i-th with Rates[i] as -b (concurrent tests on one server; stock
	// iperf3 serves one at a time, so the reference does not run it).
	Clients int
	Rates   []string
	// NotServed names the ways this case cannot run, and why.
	NotServed map[Way]string
	// RateTol, when set, is how far the two ends' rates of one flow may
	// differ in place of RateTolerance.
	RateTol float64
}

// UDP reports a datagram case.
func (c Case) UDP() bool { return hasFlag(c.Args, "-u") }

// Cases is every mode the harness covers. Each runs about a second.
func Cases() []Case {
	t := []string{"-t", "1"}
	with := func(a ...string) []string { return append(append([]string{}, t...), a...) }
	return []Case{
		{Name: "tcp", Args: with()},
		{Name: "tcp -P 3", Args: with("-P", "3")},
		{Name: "tcp -R", Args: with("-R")},
		{Name: "tcp -R -P 2", Args: with("-R", "-P", "2")},
		{Name: "tcp --bidir", Args: with("--bidir")},
		{Name: "tcp --bidir -b 100M", Args: with("--bidir", "-b", "100M")},
		{Name: "tcp --bidir -P 3 -b 50M", Args: with("--bidir", "-P", "3", "-b", "50M")},
		// Budgets paced to last about a second: shorter tests time
		// their ends to a few per cent at best.
		{Name: "tcp -n 64M -b 500M", Args: []string{"-n", "64M", "-b", "500M"}},
		{Name: "tcp -n 32M -R -b 250M", Args: []string{"-n", "32M", "-R", "-b", "250M"}},
		{Name: "tcp -k 400 -b 400M", Args: []string{"-k", "400", "-b", "400M"}},
		{Name: "tcp -k 100 -R -b 100M", Args: []string{"-k", "100", "-R", "-b", "100M"}},
		// Byte and block budgets unpaced: tens of milliseconds on
		// loopback, where each end's clock is a few per cent of the
		// test (stock against stock: up to 5.5% apart, issue 24).
		{Name: "tcp -n 1G, short", Args: []string{"-n", "1G"}, RateTol: shortRateTolerance},
		{Name: "tcp -n 1G -R, short", Args: []string{"-n", "1G", "-R"}, RateTol: shortRateTolerance},
		{Name: "tcp -k 1000, short", Args: []string{"-k", "1000"}, RateTol: shortRateTolerance},
		{Name: "tcp -b 200M", Args: with("-b", "200M")},
		{Name: "tcp -l 64K", Args: with("-l", "64K")},
		{Name: "tcp -w 512K", Args: with("-w", "512K")},
		{Name: "tcp -C cubic", Args: with("-C", "cubic")},
		{Name: "tcp -M 1200", Args: with("-M", "1200")},
		{Name: "tcp -N", Args: with("-N")},
		{Name: "tcp -O 1", Args: []string{"-t", "2", "-O", "1"}},
		{Name: "tcp -Z", Args: with("-Z")},
		{Name: "tcp -Z -R", Args: with("-Z", "-R")},
		{Name: "tcp -4", Args: with("-4")},
		{Name: "tcp -6", Args: with("-6"), IPv6: true},
		{Name: "tcp, 4 clients at once", Args: with(), Clients: 4, Rates: []string{"100M", "200M", "300M", "400M"}},
		{Name: "udp", Args: with("-u")},
		{Name: "udp -b 50M", Args: with("-u", "-b", "50M")},
		{Name: "udp -R -b 50M", Args: with("-u", "-R", "-b", "50M")},
		{Name: "udp --bidir -b 20M", Args: with("-u", "--bidir", "-b", "20M")},
		{Name: "udp -P 2 -b 20M", Args: with("-u", "-P", "2", "-b", "20M")},
		{Name: "udp -l 1000 -b 20M", Args: with("-u", "-l", "1000", "-b", "20M")},
		{Name: "udp -k 500 -b 10M", Args: []string{"-u", "-k", "500", "-b", "10M", "-l", "1400"}},
		{Name: "udp -n 2M -b 20M", Args: []string{"-u", "-n", "2M", "-b", "20M", "-l", "1400"}},
		{Name: "udp --udp-counters-64bit", Args: with("-u", "-b", "20M", "--udp-counters-64bit")},
		{Name: "udp -O 1", Args: []string{"-u", "-b", "20M", "-t", "2", "-O", "1"}},
		{Name: "udp -6", Args: with("-u", "-b", "20M", "-6"), IPv6: true},
		{Name: "udp, 4 clients at once", Args: with("-u"), Clients: 4, Rates: []string{"10M", "20M", "30M", "40M"}},
	}
}

// Flow is one data direction of a run as the client's document tells
// it: the sender's and the receiver's own accounts.
type Flow struct {
	Reverse            bool // server → client
	SentBytes          int64
	RecvBytes          int64
	SentRate, RecvRate float64 // bit/s
	SentSecs, RecvSecs float64
	// UDP: datagrams sent, expected by the receiver, lost.
	SentPackets, RecvPackets, Lost int64
}

// Result is one client's run.
type Result struct {
	Case   string
	Way    Way
	Client int // which of a case's concurrent clients
	Exit   int
	Stderr string
	Error  string // the document's "error", if any
	Flows  []Flow
	Rate   string // the client's -b, for concurrent clients
	// Keys are the document's key paths (arrays folded as "[]").
	Keys []string
	// Wall is how long the client ran, start to exit.
	Wall time.Duration
	// Segments is what the kernel counted over the case's run, all its
	// clients together: on the first client's result only (nil on the
	// others, and where the counters could not be read).
	Segments *Segments
	// Harness is a failure of the harness itself (a program missing, a
	// document that does not parse), not of the program under test.
	Harness error
}

// Harness runs cases. Start it once, run many cases, Close it.
type Harness struct {
	Tcpscope, Iperf3 string // the programs
	// Log receives the servers' output (nil discards it).
	Log io.Writer
	// Across, when set, runs the servers and the clients on two hosts
	// joined by a path (network namespaces) instead of on loopback.
	Across *Across

	ports   map[string]int // server kind and family → port
	servers []*exec.Cmd
	procs   map[string]*exec.Cmd // server kind and family → its process
}

// Across is where the programs run when not on loopback: two network
// namespaces (ip netns) joined by a path, such as a veth pair, that the
// caller made and removes.
type Across struct {
	// ServerNS and ClientNS are the namespaces of the servers and of
	// the clients.
	ServerNS, ClientNS string
	// ServerAddr is the servers' host's IPv4 address, as the clients
	// dial it. (IPv6 cases do not run across.)
	ServerAddr string
}

// firstPort is where the servers listen across a path: the namespaces
// are the caller's own, so their ports are free.
const firstPort = 5301

// hosts are the addresses the servers listen on.
func (h *Harness) hosts() []string {
	if h.Across != nil {
		return []string{h.Across.ServerAddr}
	}
	return []string{"127.0.0.1", "::1"}
}

// command is a program to run in ns (across a path), or here.
func (h *Harness) command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	if h.Across == nil {
		return exec.CommandContext(ctx, name, args...)
	}
	// ip netns exec runs the program in the namespace as its own
	// process (the same PID), so it is stopped by that PID.
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// Start starts the servers the ways need: a tcpscope server and a stock
// iperf3 server on each loopback (127.0.0.1 and ::1), on free ports, or
// on the server's host across a path.
func (h *Harness) Start(ctx context.Context) error {
	h.ports = map[string]int{}
	next := firstPort
	for _, kind := range []string{"tcpscope", "iperf3"} {
		for _, host := range h.hosts() {
			port := next
			next++
			if h.Across == nil {
				var err error
				if port, err = freePort(host); err != nil {
					return err
				}
			}
			h.ports[kind+host] = port
			if err := h.startServer(ctx, kind, host); err != nil {
				h.Close()
				return err
			}
		}
	}
	return nil
}

// startServer starts the kind's server on host, at its port, and waits
// until it listens.
func (h *Harness) startServer(ctx context.Context, kind, host string) error {
	port := h.ports[kind+host]
	ns := ""
	if h.Across != nil {
		ns = h.Across.ServerNS
	}
	// Not bound to ctx: the servers live until Close.
	var cmd *exec.Cmd
	if kind == "tcpscope" {
		cmd = h.command(context.Background(), ns, h.Tcpscope, "server", "-B", host, "-p", strconv.Itoa(port))
	} else {
		cmd = h.command(context.Background(), ns, h.Iperf3, "-s", "-B", host, "-p", strconv.Itoa(port))
	}
	h.logTo(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s server: %w", kind, err)
	}
	h.servers = append(h.servers, cmd)
	if h.procs == nil {
		h.procs = map[string]*exec.Cmd{}
	}
	h.procs[kind+host] = cmd
	if err := h.waitListening(ctx, host, port); err != nil {
		return fmt.Errorf("%s server on %s: %w", kind, host, err)
	}
	return nil
}

// restartServer stops the kind's server on host, by its PID, and starts
// a fresh one on the same port.
func (h *Harness) restartServer(ctx context.Context, kind, host string) error {
	if old := h.procs[kind+host]; old != nil {
		stopProcess(old)
		h.servers = slices.DeleteFunc(h.servers, func(c *exec.Cmd) bool { return c == old })
	}
	return h.startServer(ctx, kind, host)
}

func (h *Harness) logTo(cmd *exec.Cmd) {
	if h.Log != nil {
		cmd.Stdout, cmd.Stderr = h.Log, h.Log
	}
}

// Close stops the servers it started, by their PIDs.
func (h *Harness) Close() {
	for _, cmd := range h.servers {
		stopProcess(cmd)
	}
	h.servers = nil
}

// Run runs one case one way: all its clients, and their results.
func (h *Harness) Run(ctx context.Context, c Case, w Way) []Result {
	host := "127.0.0.1"
	switch {
	case h.Across != nil && c.IPv6:
		return []Result{{Case: c.Name, Way: w, Harness: errors.New("IPv6 cases do not run across a path")}}
	case h.Across != nil:
		host = h.Across.ServerAddr
	case c.IPv6:
		host = "::1"
	}
	server := "tcpscope"
	if w != StockToTcpscope {
		server = "iperf3"
	}
	port := h.ports[server+host]
	n := max(c.Clients, 1)
	out := make([]Result, n)
	before, berr := h.segments(ctx)
	var wg sync.WaitGroup
	for i := range n {
		args := append([]string{}, c.Args...)
		rate := ""
		if i < len(c.Rates) {
			rate = c.Rates[i]
			args = append(args, "-b", rate)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.client(ctx, w, host, port, args)
			r.Case, r.Way, r.Client, r.Rate = c.Name, w, i, rate
			out[i] = r
		}()
	}
	wg.Wait()
	if after, err := h.segments(ctx); err == nil && berr == nil {
		d := after.sub(before)
		out[0].Segments = &d
	}
	// Stock iperf3 (3.12; fixed upstream in January 2025, esnet/iperf#1812)
	// keeps a client's -C for every later test it serves: after a -C cubic run, its -R runs
	// sent with cubic where the others sent with the host's bbr, and
	// counted 0-400 retransmissions across a veth where bbr counted
	// thousands. A fresh server serves the next run as a first.
	if server == "iperf3" && hasFlag(c.Args, "-C") {
		if err := h.restartServer(ctx, server, host); err != nil {
			out[0].Harness = errors.Join(out[0].Harness, fmt.Errorf("restart iperf3 -s after -C: %w", err))
		}
	}
	return out
}

// client runs one client and reads its document.
func (h *Harness) client(ctx context.Context, w Way, host string, port int, args []string) Result {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	ns := ""
	if h.Across != nil {
		ns = h.Across.ClientNS
	}
	if w == TcpscopeToStock {
		a := append([]string{"test", "--iperf3", "-f", "iperf3-json", net.JoinHostPort(host, strconv.Itoa(port))}, args...)
		cmd = h.command(ctx, ns, h.Tcpscope, a...)
	} else {
		a := append([]string{"-c", host, "-p", strconv.Itoa(port), "-J"}, args...)
		cmd = h.command(ctx, ns, h.Iperf3, a...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := Result{Stderr: strings.TrimSpace(stderr.String()), Wall: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Exit = ee.ExitCode()
	case err != nil:
		r.Harness = err
		return r
	}
	flows, docErr, perr := ParseDocument(stdout.Bytes(), hasFlag(args, "-u"), hasFlag(args, "-R"))
	r.Flows, r.Error = flows, docErr
	r.Keys = documentKeys(stdout.Bytes())
	if perr != nil && r.Exit == 0 {
		r.Harness = fmt.Errorf("%s: %w", w, perr)
	}
	return r
}

// ParseDocument reads an iperf3 -J document (stock's, or tcpscope's
// -f iperf3-json): its flows per direction and its error, if any.
// Both programs' documents have the same shape: sum_sent and
// sum_received describe the first direction (client → server, or server
// → client with -R), the *_bidir_reverse pair the second.
func ParseDocument(b []byte, udp, reverse bool) ([]Flow, string, error) {
	var doc struct {
		Error string                     `json:"error"`
		End   map[string]json.RawMessage `json:"end"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, "", fmt.Errorf("parse the document: %w (%q)", err, truncate(string(b), 200))
	}
	var flows []Flow
	for _, suffix := range []string{"", "_bidir_reverse"} {
		sent, ok1 := doc.End["sum_sent"+suffix]
		recv, ok2 := doc.End["sum_received"+suffix]
		if !ok1 || !ok2 {
			continue
		}
		var s, r sum
		if err := json.Unmarshal(sent, &s); err != nil {
			return nil, doc.Error, fmt.Errorf("sum_sent%s: %w", suffix, err)
		}
		if err := json.Unmarshal(recv, &r); err != nil {
			return nil, doc.Error, fmt.Errorf("sum_received%s: %w", suffix, err)
		}
		f := Flow{Reverse: reverse != (suffix != ""), SentBytes: s.Bytes, RecvBytes: r.Bytes, SentRate: s.Rate, RecvRate: r.Rate,
			SentSecs: s.Seconds, RecvSecs: r.Seconds}
		if udp {
			f.SentPackets, f.RecvPackets, f.Lost = s.Packets, r.Packets, r.Lost
		}
		flows = append(flows, f)
	}
	if len(flows) == 0 && doc.Error == "" {
		return nil, "", errors.New("the document has no sum_sent/sum_received")
	}
	return flows, doc.Error, nil
}

type sum struct {
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes"`
	Rate    float64 `json:"bits_per_second"`
	Packets int64   `json:"packets"`
	Lost    int64   `json:"lost_packets"`
}

func hasFlag(args []string, f string) bool {
	for _, a := range args {
		if a == f {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// freePort asks the kernel for a port free for both TCP and UDP.
func freePort(host string) (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port)))
		l.Close()
		if err == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, errors.New("find a free port: none free for both TCP and UDP")
}

// waitListening polls until a server listens: here by connecting, across
// a path by asking the server's host (ss).
func (h *Harness) waitListening(ctx context.Context, host string, port int) error {
	if h.Across == nil {
		return waitListening(ctx, host, port)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := h.command(ctx, h.Across.ServerNS, "ss", "-Hltn", "sport", "=", ":"+strconv.Itoa(port)).Output()
		if err == nil && len(bytes.TrimSpace(out)) > 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not listening after 10 s (ss: %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitListening polls until a server accepts connections.
func waitListening(ctx context.Context, host string, port int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not listening after 10 s: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// documentKeys lists a JSON document's key paths, array elements folded
// as "[]" (jq's paths with the indexes folded); nil when it does not
// parse.
func documentKeys(b []byte) []string {
	var doc any
	if json.Unmarshal(b, &doc) != nil {
		return nil
	}
	set := map[string]bool{}
	var walk func(v any, prefix string)
	walk = func(v any, prefix string) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				p := prefix + "." + k
				set[p] = true
				walk(c, p)
			}
		case []any:
			for _, c := range x {
				walk(c, prefix+".[]")
			}
		}
	}
	walk(doc, "")
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
