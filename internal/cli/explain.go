package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/report"
)

const (
	explainHint = "give what 'tcpscope test --json' (or --json-stream) or 'iperf3 -J' saved"
	failedHint  = "a test that did not finish has no results to diagnose: run it again"
)

func newExplainCmd(stdout io.Writer) *cobra.Command {
	var (
		target  model.Bitrate
		asJSON  bool
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "explain RESULT",
		Short: "Diagnose a saved test result offline (tcpscope's or iperf3's)",
		Long: `Read a saved test result (or - for standard input) and diagnose it with
the same rules as 'tcpscope test': what limits the transfer, the evidence,
the fix and its predicted effect. It needs no network and gives the same
findings every time. It reads:

  tcpscope test --json          both ends' kernels: every rule runs
  tcpscope test --json-stream   the same, rebuilt from the events
  iperf3 -J or --json-stream (stock iperf3's, client or server,
  or tcpscope's -f iperf3-json)
                                bytes, times, retransmissions, CPU and the
                                sender's cwnd and RTT only: explain says
                                what the document lacks and which rules
                                could not run, and never calls such a
                                run healthy

Input of another kind is refused with exit status 2.`,
		Example: `  tcpscope test 192.0.2.7 --json > run.json
  tcpscope explain run.json --target-rate 1G
  iperf3 -c 192.0.2.7 -J > iperf3.json
  tcpscope explain iperf3.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("tcpscope explain RESULT", "explain needs one saved result, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := readResult(args[0])
			if err != nil {
				return err
			}
			run := in.run
			run.Diagnosis = diagnose.Test(run, diagnose.Options{Target: target})
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(diagnose.Explanation{Schema: diagnose.ExplanationSchema, Findings: run.Diagnosis, Input: in.input, Lacks: in.lacks})
			}
			if err := writeInput(stdout, in); err != nil {
				return err
			}
			return report.WriteDiagnosis(stdout, run.Diagnosis, verbose)
		},
	}
	cmd.Flags().Var(rate{&target}, "target-rate", "the rate you expect of the path; fixes are sized for it")
	cmd.Flags().BoolVarP(&asJSON, "json", "J", false, "print the findings as JSON")
	cmd.Flags().BoolVarP(&verbose, "verbose", "V", false, "add each finding's explanation")
	return cmd
}

// result is a saved result as explain read it: the run, and for input
// other than a --json result what it was and what it lacks.
type result struct {
	run   *model.Run
	input string
	lacks []string
}

// writeInput says what was read when it was not a --json result, and
// what it lacks, before the diagnosis.
func writeInput(w io.Writer, in *result) error {
	if in.input == "" {
		return nil
	}
	var b strings.Builder
	c := in.run.Config
	what := fmt.Sprintf("%s, %d stream", strings.ToUpper(c.Protocol), c.Parallel)
	if c.Parallel != 1 {
		what += "s"
	}
	switch {
	case c.Bidir:
		what += " each way"
	case c.Reverse:
		what += ", reverse"
	}
	if c.Duration > 0 {
		what += fmt.Sprintf(", %v", c.Duration)
	}
	fmt.Fprintf(&b, "read: %s: %s\n", in.input, what)
	if len(in.lacks) > 0 {
		b.WriteString("not in this result:\n")
		for _, l := range in.lacks {
			fmt.Fprintf(&b, "  - %s\n", l)
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// readResult loads a saved result and tells its kind by its first JSON
// value: a tcpscope --json document has tcpscope's schema, a stream's
// lines are events, and iperf3's -J has start and end.
func readResult(name string) (*result, error) {
	var r io.Reader = os.Stdin
	if name == "-" {
		name = "standard input"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, usagef(explainHint, "%v", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, 1<<30))
	if err != nil {
		return nil, usagef(explainHint, "read %s: %v", name, err)
	}
	var probe struct {
		Schema string          `json:"schema"`
		Event  string          `json:"event"`
		Start  json.RawMessage `json:"start"`
		End    json.RawMessage `json:"end"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&probe); err != nil {
		return nil, usagef(explainHint, "%s: not a test result: %s", name, model.JSONProblem(err, "a tcpscope result"))
	}
	switch {
	case probe.Event != "" && probe.Schema == "":
		doc, err := iperf3.ReadJSONStream(bytes.NewReader(data))
		return iperf3Result(name, doc, err, "iperf3 --json-stream")
	case probe.Event != "":
		run, err := report.ReadStream(bytes.NewReader(data))
		if errors.Is(err, report.ErrNoEnd) {
			return nil, usagef(failedHint, "%s: %v", name, err)
		}
		if err != nil {
			return nil, usagef(explainHint, "%s: %v", name, err)
		}
		if err := summarized(name, run); err != nil {
			return nil, err
		}
		return &result{run: run, input: "tcpscope --json-stream"}, nil
	case probe.Schema == model.SchemaVersion:
		var run model.Run
		if err := json.Unmarshal(data, &run); err != nil {
			return nil, usagef(explainHint, "%s: not a readable tcpscope result: %s", name, model.JSONProblem(err, "a tcpscope result"))
		}
		if err := summarized(name, &run); err != nil {
			return nil, err
		}
		return &result{run: &run}, nil
	case probe.Schema != "":
		return nil, usagef(explainHint, "%s: a %q document, not a test result (%s)", name, probe.Schema, model.SchemaVersion)
	case probe.Start != nil || probe.End != nil:
		doc, err := iperf3.ReadJSON(bytes.NewReader(data))
		return iperf3Result(name, doc, err, "iperf3 -J")
	}
	return nil, usagef(explainHint, "%s: a JSON document of another kind: neither tcpscope's result nor iperf3's -J", name)
}

// iperf3Result is an iperf3 document read as kind, or the error.
func iperf3Result(name string, doc *iperf3.Document, err error, kind string) (*result, error) {
	if errors.Is(err, iperf3.ErrTestFailed) {
		return nil, usagef(failedHint, "%s: %v", name, err)
	}
	if err != nil {
		return nil, usagef(explainHint, "%s: %v", name, err)
	}
	return &result{run: doc.Run, input: fmt.Sprintf("%s (%s, the %s's document)", kind, doc.Writer, doc.Side), lacks: doc.Lacks}, nil
}

// summarized checks that a tcpscope run has a summary to diagnose.
func summarized(name string, run *model.Run) error {
	if len(run.Summary) == 0 {
		return usagef("a test that ran to its end has a summary", "%s: the result has no summary to diagnose", name)
	}
	return nil
}
