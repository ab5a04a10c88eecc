package cli

import (
	"encoding/json"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/report"
)

func newExplainCmd(stdout io.Writer) *cobra.Command {
	var (
		target  model.Bitrate
		asJSON  bool
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "explain RESULT.json",
		Short: "Diagnose a saved test result offline",
		Long: `Read a result saved with 'tcpscope test --json' (or - for standard input)
and diagnose it with the same rules as 'tcpscope test': what limits the
transfer, the evidence, the fix and its predicted effect. It needs no network
and gives the same findings every time.`,
		Example: `  tcpscope test 192.0.2.7 --json > run.json
  tcpscope explain run.json --target-rate 1G`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("tcpscope explain RESULT.json", "explain needs one saved result, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := readRun(args[0])
			if err != nil {
				return err
			}
			run.Diagnosis = diagnose.Test(run, diagnose.Options{Target: target})
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(diagnose.Explanation{Schema: diagnose.ExplanationSchema, Findings: run.Diagnosis})
			}
			return report.WriteDiagnosis(stdout, run.Diagnosis, verbose)
		},
	}
	cmd.Flags().Var(rate{&target}, "target-rate", "the rate you expect of the path; fixes are sized for it")
	cmd.Flags().BoolVarP(&asJSON, "json", "J", false, "print the findings as JSON")
	cmd.Flags().BoolVarP(&verbose, "verbose", "V", false, "add each finding's explanation")
	return cmd
}

// readRun loads a saved test result and checks that it is one.
func readRun(name string) (*model.Run, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, usagef("give the file 'tcpscope test --json' wrote", "%v", err)
		}
		defer f.Close()
		r = f
	}
	var run model.Run
	if err := json.NewDecoder(io.LimitReader(r, 1<<30)).Decode(&run); err != nil {
		return nil, usagef("give the file 'tcpscope test --json' wrote", "%s: not a tcpscope result: %v", name, err)
	}
	if run.Schema != model.SchemaVersion {
		return nil, usagef("give the file 'tcpscope test --json' wrote", "%s: schema %q, want %q", name, run.Schema, model.SchemaVersion)
	}
	if len(run.Summary) == 0 {
		return nil, usagef("a test that ran to its end has a summary", "%s: the result has no summary to diagnose", name)
	}
	return &run, nil
}
