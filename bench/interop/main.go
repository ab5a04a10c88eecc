// Command interop runs the differential harness against stock iperf3
// (internal/interop) over every mode, many rounds, and prints the table
// docs/INTEROP.md shows. bench/interop.sh builds and runs it.
//
// A long run can be split: -ways picks the ways, -only the modes, -save
// writes the tallies as JSON, and -merge prints the tables of saved runs
// together (a later tally of the same mode and way adds to the earlier).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/interop"
)

func main() {
	tcpscope := flag.String("tcpscope", "bin/tcpscope", "the tcpscope binary")
	iperf3 := flag.String("iperf3", "iperf3", "the stock iperf3 binary")
	rounds := flag.Int("rounds", 20, "runs of every mode, every way")
	only := flag.String("only", "", "run only the modes whose name contains this")
	ways := flag.String("ways", "all", "ways to run: all, or a comma list of stock (iperf3 → tcpscope), tcpscope (tcpscope → iperf3), reference")
	save := flag.String("save", "", "write the tallies to this JSON file")
	merge := flag.String("merge", "", "print the tables of these saved tallies (comma list) and exit")
	refusals := flag.Bool("refusals", true, "also check the refusals (on loopback)")
	serverNS := flag.String("server-ns", "", "run the servers in this network namespace (with -client-ns and -server-addr: across a path, not on loopback)")
	clientNS := flag.String("client-ns", "", "run the clients in this network namespace")
	serverAddr := flag.String("server-addr", "", "the servers' IPv4 address in -server-ns, as the clients dial it")
	flag.Parse()
	cases := interop.Cases()
	if *merge != "" {
		m := map[string]map[interop.Way]*interop.Tally{}
		for _, f := range strings.Split(*merge, ",") {
			b, err := os.ReadFile(f)
			if err != nil {
				fail(err)
			}
			var part map[string]map[interop.Way]*interop.Tally
			if err := json.Unmarshal(b, &part); err != nil {
				fail(fmt.Errorf("%s: %w", f, err))
			}
			interop.MergeTallies(m, part)
		}
		interop.WriteTable(os.Stdout, cases, m)
		fmt.Println()
		interop.WriteCostTable(os.Stdout, cases, m)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	h := &interop.Harness{Tcpscope: *tcpscope, Iperf3: *iperf3}
	if *serverNS != "" || *clientNS != "" || *serverAddr != "" {
		if *serverNS == "" || *clientNS == "" || *serverAddr == "" {
			fail(fmt.Errorf("-server-ns, -client-ns and -server-addr go together"))
		}
		h.Across = &interop.Across{ServerNS: *serverNS, ClientNS: *clientNS, ServerAddr: *serverAddr}
	}
	if err := h.Start(ctx); err != nil {
		fail(err)
	}
	defer h.Close()
	var picked []interop.Case
	for _, c := range cases {
		if strings.Contains(c.Name, *only) {
			picked = append(picked, c)
		}
	}
	run := map[interop.Way]bool{}
	for _, w := range strings.Split(*ways, ",") {
		switch w {
		case "all":
			run[interop.StockToTcpscope], run[interop.TcpscopeToStock], run[interop.Reference] = true, true, true
		case "stock":
			run[interop.StockToTcpscope] = true
		case "tcpscope":
			run[interop.TcpscopeToStock] = true
		case "reference":
			run[interop.Reference] = true
		default:
			fail(fmt.Errorf("unknown way %q", w))
		}
	}
	start := time.Now()
	refRounds := *rounds
	if !run[interop.Reference] {
		refRounds = 0 // only where a check needs it, and not tallied
	}
	var list []interop.Way
	for _, w := range interop.Ways {
		if run[w] {
			list = append(list, w)
		}
	}
	m := h.MatrixOf(ctx, picked, list, *rounds, refRounds, func(r interop.Result, bad []string) {
		if len(bad) > 0 {
			fmt.Fprintf(os.Stderr, "%s, %s, client %d: %s\n", r.Case, r.Way, r.Client, strings.Join(bad, "; "))
		}
	})
	for _, byWay := range m {
		for w, t := range byWay {
			if t.Why == "not run this time" {
				delete(byWay, w)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "%d modes × %d rounds in %v\n", len(picked), *rounds, time.Since(start).Round(time.Second))
	if *save != "" {
		b, _ := json.Marshal(m)
		if err := os.WriteFile(*save, b, 0o644); err != nil {
			fail(err)
		}
	}
	interop.WriteTable(os.Stdout, picked, m)
	fmt.Println()
	interop.WriteCostTable(os.Stdout, picked, m)
	if !*refusals {
		return
	}
	fmt.Println()
	fmt.Println("| refusal | stock client against `tcpscope server` | against `iperf3 -s` | verdict |")
	fmt.Println("|---|---|---|---|")
	for _, rf := range interop.Refusals() {
		rr, err := h.Refuse(ctx, rf)
		if err != nil {
			fmt.Fprintln(os.Stderr, "interop:", rf.Name+":", err)
			continue
		}
		stock := "no such limit"
		if rr.Stock != nil {
			stock = interop.Said(*rr.Stock)
		}
		verdict := "as stock"
		if rr.Stock == nil {
			verdict = "readable"
		}
		if bad := interop.CheckRefusal(rf, rr); len(bad) > 0 {
			verdict = strings.Join(bad, "; ")
		}
		fmt.Printf("| %s | %s | %s | %s |\n", rf.Name, interop.Said(*rr.Tcpscope), stock, verdict)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "interop:", err)
	os.Exit(1)
}
