// Command interop runs the differential harness against stock iperf3
// (internal/interop) over every mode, many rounds, and prints the table
// docs/INTEROP.md shows. bench/interop.sh builds and runs it.
package main

import (
	"context"
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
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	h := &interop.Harness{Tcpscope: *tcpscope, Iperf3: *iperf3}
	if err := h.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		os.Exit(1)
	}
	defer h.Close()
	var cases []interop.Case
	for _, c := range interop.Cases() {
		if strings.Contains(c.Name, *only) {
			cases = append(cases, c)
		}
	}
	start := time.Now()
	m := h.Matrix(ctx, cases, *rounds, *rounds, func(r interop.Result, bad []string) {
		if len(bad) > 0 {
			fmt.Fprintf(os.Stderr, "%s, %s, client %d: %s\n", r.Case, r.Way, r.Client, strings.Join(bad, "; "))
		}
	})
	fmt.Fprintf(os.Stderr, "%d modes × %d rounds in %v\n", len(cases), *rounds, time.Since(start).Round(time.Second))
	interop.WriteTable(os.Stdout, cases, m)
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
		if bad := interop.CheckRefusal(rf, rr); len(bad) > 0 {
			verdict = strings.Join(bad, "; ")
		}
		fmt.Printf("| %s | %s | %s | %s |\n", rf.Name, interop.Said(*rr.Tcpscope), stock, verdict)
	}
}
