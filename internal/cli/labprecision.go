package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/precision"
	"github.com/tcpscope/tcpscope/internal/model"
)

// newLabPrecisionCmd is `tcpscope lab precision`: the diagnosis's
// precision measured on this machine.
func newLabPrecisionCmd(stdout, stderr io.Writer) *cobra.Command {
	var suite, only, save string
	var repeat, count int
	var seed uint64
	cmd := &cobra.Command{
		Use:   "precision",
		Short: "Measure the diagnosis: false alarms on healthy paths, hits on impaired ones",
		Long: `Run real tests across lab paths and diagnose each. The healthy suite (tuned
hosts, paths from a LAN to 150 ms and 10 Mbit/s to 1 Gbit/s, bbr, cubic
and reno, and loopback) must be called the bottleneck with no warning or
critical finding; the impairment suite (variations of every cause in
docs/DIAGNOSES.md) must have its cause in the verdict. The random suite
draws --count scenarios from --seed: every cause, and healthy paths, on
paths from 5 Mbit/s to 1 Gbit/s and 1 to 200 ms, each named by its seed
and index (rSEED#I:) so any run is reproduced with --only; with
--backend kernel the path's bottleneck, loss, policer and middlebox are
the kernel's own (tc and nftables in a router) and the emulator only
delays. Prints a Markdown table per suite. Each run takes 5 to 7 s; the
fixed suites once take about 5 minutes. Exits 1 when any run was judged
wrong.`,
		Args: noArgs("tcpscope lab precision --suite healthy"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if repeat < 1 {
				return usagef("--repeat 5", "--repeat must be at least 1")
			}
			if count < 1 {
				return usagef("--count 50", "--count must be at least 1")
			}
			// lab's --backend: the random suite's paths are the
			// emulator's (auto) or the kernel's tools'.
			backend := lab.UseEmulator
			switch b := cmd.Flag("backend").Value.String(); b {
			case "auto", "emulator":
			case "kernel":
				backend = lab.UseKernel
			default:
				return usagef("--backend kernel", "--backend %q: the random suite runs on the emulator or the kernel", b)
			}
			suites := map[string][]precision.Scenario{"healthy": precision.Healthy(), "impairments": precision.Impairments(),
				"random": precision.Random(seed, count, backend)}
			names := []string{"healthy", "impairments"}
			switch suite {
			case "all":
			case "healthy", "impairments", "random":
				names = []string{suite}
			default:
				return usagef("--suite healthy|impairments|random|all", "unknown suite %q", suite)
			}
			if err := labCheck(); err != nil {
				return err
			}
			wrong := 0
			for _, name := range names {
				var ss []precision.Scenario
				for _, s := range suites[name] {
					if strings.Contains(s.Name, only) {
						ss = append(ss, s)
					}
				}
				out := precision.Run(cmd.Context(), ss, repeat, func(o precision.Outcome) {
					verdict := "right"
					if o.Err != nil {
						verdict = "could not run: " + o.Err.Error()
					} else if !o.OK {
						verdict, wrong = "WRONG", wrong+1
					}
					if len(o.FixProblems) > 0 {
						verdict += "; fixes: " + strings.Join(o.FixProblems, "; ")
					}
					fmt.Fprintf(stderr, "%s: %s (verdict %s, alarms %s, goodput %v)\n", o.Scenario, verdict,
						strings.Join(o.Verdict, "+"), strings.Join(o.Alarms, " "), o.Goodput)
					if save != "" && o.Run != nil {
						if err := saveRun(save, o.Scenario, o.Run); err != nil {
							fmt.Fprintf(stderr, "lab precision: %v\n", err)
						}
					}
				})
				fmt.Fprintf(stdout, "## %s\n\n", name)
				if name == "random" {
					fmt.Fprintf(stdout, "Seed %d, %d scenarios, %s.\n\n", seed, count, backend)
					precision.RandomTable(stdout, ss, out)
				} else {
					precision.Table(stdout, ss, out)
				}
				fmt.Fprintln(stdout)
			}
			if wrong > 0 {
				return fmt.Errorf("lab precision: %d runs judged wrong", wrong)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&suite, "suite", "all", "healthy, impairments, random, or all (healthy and impairments)")
	cmd.Flags().IntVar(&repeat, "repeat", 1, "runs of each scenario")
	cmd.Flags().StringVar(&only, "only", "", "run only the scenarios whose name contains this")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "the random suite's seed")
	cmd.Flags().StringVar(&save, "save", "", "write each run's result (tcpscope test --json, without the diagnosis) to this directory, named after its scenario")
	cmd.Flags().IntVar(&count, "count", 40, "how many scenarios the random suite draws")
	return cmd
}

// saveRun writes a run's result as tcpscope test --json would, without
// its diagnosis (tcpscope explain diagnoses it again), to dir, named
// after its scenario.
func saveRun(dir, scenario string, run *model.Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save runs: %w", err)
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, scenario)
	if len(name) > 120 {
		name = name[:120]
	}
	b, err := json.MarshalIndent(run, "", " ")
	if err != nil {
		return fmt.Errorf("save %s: %w", scenario, err)
	}
	path := filepath.Join(dir, name+".json")
	for i := 2; ; i++ { // a scenario run again (--repeat) keeps each run
		if _, err := os.Stat(path); err != nil {
			break
		}
		path = filepath.Join(dir, fmt.Sprintf("%s.%d.json", name, i))
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("save %s: %w", scenario, err)
	}
	return nil
}
