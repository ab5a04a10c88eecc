package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/experiment"
	"github.com/tcpscope/tcpscope/internal/lab/profile"
	"github.com/tcpscope/tcpscope/internal/report"
)

// labFlags are shared by the lab subcommands.
type labFlags struct {
	profiles string // a user TOML file added to the built-ins
	backend  string // --backend: auto, emulator, netem or kernel
}

func newLabCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &labFlags{}
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Emulated WAN paths between test hosts in network namespaces",
		Long: `The lab builds test hosts in network namespaces joined by an emulated
path (rate, delay, loss, queue, MTU) and runs experiments across it. It
needs root (CAP_NET_ADMIN); traffic never leaves its namespaces, and
everything it creates is removed on exit, on error and on Ctrl-C
('tcpscope lab clean' removes what a killed run left).`,
		Args: noArgs("tcpscope lab profiles"),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&f.profiles, "profiles", "", "TOML file of extra path and host profiles")
	cmd.PersistentFlags().StringVar(&f.backend, "backend", "auto", "what carries the path: emulator, netem (kernel netem), kernel (tc and nftables in a router, the emulator for the delay), or auto (netem where the kernel has it and it can)")
	cmd.AddCommand(
		&cobra.Command{
			Use:   "profiles",
			Short: "List the path and host profiles",
			Args:  noArgs("tcpscope lab profiles"),
			RunE: func(cmd *cobra.Command, args []string) error {
				set, err := f.load()
				if err != nil {
					return err
				}
				printProfiles(stdout, set)
				return nil
			},
		},
		newLabRunCmd(f, stdout, stderr),
		newLabShellCmd(f, stdout, stderr),
		newLabPrecisionCmd(stdout, stderr),
		&cobra.Command{
			Use:   "selftest",
			Short: "Check the path emulator's accuracy on this machine",
			Long: `Measure the emulator on this machine: round trips of 2, 20 and 150 ms
must measure within 0.3 ms + 1%, bottlenecks of 10 Mbit/s, 100 Mbit/s and
1 Gbit/s must deliver within 2% of their rate, and random loss of 0.1%, 1%
and 5% must drop within its 99.9% binomial interval. Takes about 30 s.
Exits 1 when a check fails.`,
			Args: noArgs("tcpscope lab selftest"),
			RunE: func(cmd *cobra.Command, args []string) error {
				return labSelfTest(cmd.Context(), stdout)
			},
		},
		&cobra.Command{
			Use:   "clean",
			Short: "Remove namespaces left by killed lab runs",
			Args:  noArgs("tcpscope lab clean"),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := labCheck(); err != nil {
					return err
				}
				c, err := lab.Clean(cmd.Context())
				if c.Namespaces > 0 || c.Processes > 0 {
					fmt.Fprintf(stdout, "lab: removed %d namespaces left by killed lab runs and ended %d processes still running in them\n", c.Namespaces, c.Processes)
				}
				if err != nil {
					return fmt.Errorf("lab clean: %w", err)
				}
				if c.Namespaces == 0 {
					fmt.Fprintln(stdout, "lab: no leftovers")
				}
				return nil
			},
		},
	)
	return cmd
}

// parseBackend reads --backend.
func (f *labFlags) parseBackend() (lab.Backend, error) {
	b, err := lab.ParseBackend(f.backend)
	if err != nil {
		return 0, usagef("--backend auto|emulator|netem", "%v", err)
	}
	return b, nil
}

// load returns the built-in profiles plus the user's file, if any.
func (f *labFlags) load() (profile.Set, error) {
	set, err := profile.Builtin()
	if err != nil || f.profiles == "" {
		return set, err
	}
	b, err := os.ReadFile(f.profiles)
	if err != nil {
		return set, usagef("--profiles takes a readable TOML file", "%v", err)
	}
	user, err := profile.Parse(b)
	if err != nil {
		return set, usagef("see 'tcpscope lab profiles' for the format", "%s: %v", f.profiles, err)
	}
	return set.Merge(user), nil
}

func printProfiles(w io.Writer, set profile.Set) {
	paths, hosts := set.Names()
	fmt.Fprintln(w, "paths (--path):")
	for _, n := range paths {
		p := set.Paths[n]
		rate := p.Rate.String()
		if p.RateBack != p.Rate {
			rate += " (back " + p.RateBack.String() + ")"
		}
		fmt.Fprintf(w, "  %-16s %s, RTT %v, BDP %s%s\n      %s\n", n, rate, p.RTT, p.BDP().Decimal(), impairments(p), p.Description)
	}
	fmt.Fprintln(w, "hosts (--hosts):")
	for _, n := range hosts {
		fmt.Fprintf(w, "  %-16s %s\n", n, set.Hosts[n].Description)
	}
}

// impairments lists what a path sets beyond rate and RTT, each as ", …".
func impairments(p profile.Path) string {
	var b strings.Builder
	q := p.Queue
	switch {
	case q.Packets > 0:
		fmt.Fprintf(&b, ", queue %d packets", q.Packets)
	case q.Bytes > 0:
		fmt.Fprintf(&b, ", queue %s", q.Bytes.Binary())
	case q.Time > 0:
		fmt.Fprintf(&b, ", queue %v", q.Time)
	}
	if p.Loss > 0 {
		fmt.Fprintf(&b, ", loss %g%%", 100*p.Loss)
	}
	if g := p.BurstLoss; g != nil {
		fmt.Fprintf(&b, ", burst loss %.3g%%", 100*g.MeanLoss())
	}
	if p.Jitter > 0 {
		fmt.Fprintf(&b, ", jitter %v (%v)", p.Jitter, p.JitterDist)
	}
	if p.Reorder > 0 {
		fmt.Fprintf(&b, ", reorder %g%%", 100*p.Reorder)
	}
	if p.Duplicate > 0 {
		fmt.Fprintf(&b, ", duplicate %g%%", 100*p.Duplicate)
	}
	if p.MTU > 0 {
		fmt.Fprintf(&b, ", MTU %d", p.MTU)
		if p.BlackHole {
			b.WriteString(" (black hole)")
		}
	}
	return b.String()
}

// labCheck turns the lab's preconditions into errors a user can act on.
func labCheck() error {
	err := lab.Check()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lab.ErrPermission):
		return &permissionError{msg: "the lab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces", hint: "sudo tcpscope lab ..."}
	case errors.Is(err, lab.ErrMissingTool):
		return &permissionError{msg: strings.TrimPrefix(err.Error(), "lab: "), hint: "install iproute2 and nftables (make setup does)"}
	}
	return err
}

// permissionError is a precondition the user must fix outside tcpscope.
type permissionError struct{ msg, hint string }

func (e *permissionError) Error() string { return e.msg }

func noArgs(hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 0 {
			return usagef(hint, "%s takes no arguments, got %q", cmd.Name(), args)
		}
		return nil
	}
}

func labSelfTest(ctx context.Context, stdout io.Writer) error {
	if err := labCheck(); err != nil {
		return err
	}
	checks, err := experiment.SelfTest(ctx, Version)
	if err != nil {
		return fmt.Errorf("lab selftest: %w", err)
	}
	t := &report.Table{Title: "tcpscope lab selftest: the path emulator on this machine",
		Columns: []string{"check", "set", "measured", "bound", "verdict"}}
	failed := 0
	for _, c := range checks {
		v := "ok"
		if !c.OK {
			v, failed = "FAILED", failed+1
		}
		t.Rows = append(t.Rows, []string{c.Name, c.Set, c.Measured, c.Bound, v})
	}
	if err := report.WriteTable(stdout, t); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("lab selftest: %d of %d checks failed", failed, len(checks))
	}
	return nil
}
