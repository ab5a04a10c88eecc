package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/lab/experiment"
	"github.com/tcpscope/tcpscope/internal/report"
)

type labRunFlags struct {
	path, hosts string
	repeat      int
	duration    time.Duration
	omit        time.Duration
	congestion  string
	quick       bool
	json        bool
	plot        string
	noPlot      bool
}

func newLabRunCmd(lf *labFlags, stdout, stderr io.Writer) *cobra.Command {
	f := &labRunFlags{}
	var names []string
	for _, s := range experiment.Specs() {
		names = append(names, fmt.Sprintf("  %-13s %s (default path %s)", s.Name, s.Description, s.DefaultPath))
	}
	cmd := &cobra.Command{
		Use:   "run EXPERIMENT",
		Short: "Run an experiment across an emulated path",
		Long: "Run one of the lab's experiments and print its table beside the model,\n" +
			"with a plot (PNG and SVG). Experiments:\n" + strings.Join(names, "\n"),
		Example: `  tcpscope lab run window-sweep --path gigasunet-21ms
  tcpscope lab run tuning --repeat 10
  tcpscope lab run loss-sweep --quick --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("tcpscope lab run --help lists them", "lab run needs one experiment name")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// 0 is "the experiment's default" only when not given: an
			// explicit --repeat 0 ran the default 5 times.
			if cmd.Flags().Changed("repeat") && (f.repeat < 1 || f.repeat > 1000) {
				return usagef("--repeat 1 or more runs per point (up to 1000)", "bad --repeat %d", f.repeat)
			}
			if cmd.Flags().Changed("time") && f.duration <= 0 {
				return usagef("give each run a length, e.g. -t 10", "bad -t %v", f.duration)
			}
			return runLab(cmd.Context(), lf, f, args[0], stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.path, "path", "", "path profile (default: the experiment's)")
	fl.StringVar(&f.hosts, "hosts", "", "host tuning of both ends (default: the experiment's)")
	fl.IntVar(&f.repeat, "repeat", 0, "runs per point (default 1; tuning 5, cc-compare 3)")
	fl.VarP(seconds{&f.duration}, "time", "t", "length of each run (default 10s)")
	fl.VarP(seconds{&f.omit}, "omit", "O", "slow start left out of each run (default 2s or 2 RTT)")
	fl.StringVarP(&f.congestion, "congestion", "C", "", "congestion control where the experiment does not vary it")
	fl.BoolVar(&f.quick, "quick", false, "fewer points (for a first look)")
	fl.BoolVarP(&f.json, "json", "J", false, "print the result as JSON")
	fl.StringVar(&f.plot, "plot", "", "write the plot to FILE.png and FILE.svg (default tcpscope-EXPERIMENT)")
	fl.BoolVar(&f.noPlot, "no-plot", false, "do not write a plot")
	return cmd
}

func runLab(ctx context.Context, lf *labFlags, f *labRunFlags, name string, stdout, stderr io.Writer) error {
	if _, err := experiment.Lookup(name); err != nil {
		return usagef("tcpscope lab run --help lists the experiments", "%v", err)
	}
	set, err := lf.load()
	if err != nil {
		return err
	}
	if f.path != "" {
		if _, err := set.Path(f.path); err != nil {
			return usagef("tcpscope lab profiles lists them", "%v", err)
		}
	}
	if f.hosts != "" {
		if _, err := set.Host(f.hosts); err != nil {
			return usagef("tcpscope lab profiles lists them", "%v", err)
		}
	}
	if err := labCheck(); err != nil {
		return err
	}
	backend, err := lf.parseBackend()
	if err != nil {
		return err
	}
	progress := func(format string, args ...any) { fmt.Fprintf(stderr, "lab: "+format+"\n", args...) }
	env := experiment.Env{
		Build: experiment.LabBuilder(Version, backend, progress), Profiles: set, Path: f.path, Hosts: f.hosts,
		Repeat: f.repeat, Duration: f.duration, Omit: f.omit, Congestion: f.congestion, Quick: f.quick,
		Progress: progress,
	}
	res, err := experiment.Run(ctx, name, env)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "tcpscope: lab run interrupted; the lab was taken down")
			return &exitError{code: ExitInterrupted}
		}
		return fmt.Errorf("lab run %s: %w", name, err)
	}
	if !f.noPlot {
		prefix := f.plot
		if prefix == "" {
			prefix = "tcpscope-" + name
		}
		for _, format := range []string{"png", "svg"} {
			if err := writePlotFile(prefix+"."+format, res.Chart, format); err != nil {
				return err
			}
		}
		if !f.json {
			res.Table.Notes = append(res.Table.Notes, fmt.Sprintf("plot: %s.png, %s.svg", prefix, prefix))
		}
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return report.WriteTable(stdout, res.Table)
}

func writePlotFile(name string, c *report.Chart, format string) error {
	out, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if err := report.WritePlot(out, c, format); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
