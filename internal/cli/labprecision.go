package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tcpscope/tcpscope/internal/lab/precision"
)

// newLabPrecisionCmd is `tcpscope lab precision`: the diagnosis's
// precision measured on this machine.
func newLabPrecisionCmd(stdout, stderr io.Writer) *cobra.Command {
	var suite, only string
	var repeat int
	cmd := &cobra.Command{
		Use:   "precision",
		Short: "Measure the diagnosis: false alarms on healthy paths, hits on impaired ones",
		Long: `Run real tests across lab paths and diagnose each. The healthy suite (tuned
hosts, paths from a LAN to 150 ms and 10 Mbit/s to 1 Gbit/s, bbr, cubic
and reno, and loopback) must be called the bottleneck with no warning or
critical finding; the impairment suite (variations of every cause in
docs/DIAGNOSES.md) must have its cause in the verdict. Prints a Markdown
table per suite. Each run takes 5 to 6 s; the full suites once take
about 5 minutes. Exits 1 when any run was judged wrong.`,
		Args: noArgs("tcpscope lab precision --suite healthy"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if repeat < 1 {
				return usagef("--repeat 5", "--repeat must be at least 1")
			}
			suites := map[string][]precision.Scenario{"healthy": precision.Healthy(), "impairments": precision.Impairments()}
			names := []string{"healthy", "impairments"}
			switch suite {
			case "all":
			case "healthy", "impairments":
				names = []string{suite}
			default:
				return usagef("--suite healthy|impairments|all", "unknown suite %q", suite)
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
					fmt.Fprintf(stderr, "%s: %s (verdict %s, alarms %s, goodput %v)\n", o.Scenario, verdict,
						strings.Join(o.Verdict, "+"), strings.Join(o.Alarms, " "), o.Goodput)
				})
				fmt.Fprintf(stdout, "## %s\n\n", name)
				precision.Table(stdout, ss, out)
				fmt.Fprintln(stdout)
			}
			if wrong > 0 {
				return fmt.Errorf("lab precision: %d runs judged wrong", wrong)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&suite, "suite", "all", "healthy, impairments or all")
	cmd.Flags().IntVar(&repeat, "repeat", 1, "runs of each scenario")
	cmd.Flags().StringVar(&only, "only", "", "run only the scenarios whose name contains this")
	return cmd
}
