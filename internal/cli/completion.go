package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/hostinfo"
	"github.com/tcpscope/tcpscope/internal/lab/experiment"
	"github.com/tcpscope/tcpscope/internal/lab/profile"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/sockdiag"
)

// Shell completion of names, beside cobra's of commands and flags: each
// list comes from the package that owns the names.

type completeFunc = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

// addCompletions wires the name completions into root's commands.
func addCompletions(root *cobra.Command) {
	cc := fixed(func() []string { return hostinfo.Reader{}.CongestionControls() })
	paths := profileNames(func(s profile.Set) []string {
		names, _ := s.Names()
		for i, n := range names {
			names[i] = n + "\t" + s.Paths[n].Description
		}
		return names
	})
	hosts := profileNames(func(s profile.Set) []string {
		_, names := s.Names()
		for i, n := range names {
			names[i] = n + "\t" + s.Hosts[n].Description
		}
		return names
	})
	completeFlag(root, "test", "congestion", cc)
	completeFlag(root, "diagnose", "congestion", cc)
	completeFlag(root, "lab run", "congestion", cc)
	completeFlag(root, "lab run", "path", paths)
	completeFlag(root, "lab run", "hosts", hosts)
	completeFlag(root, "lab shell", "hosts", hosts)
	completeFlag(root, "watch", "netns", fixed(sockdiag.NamespaceNames))
	completeFlag(root, "test", "format", fixed(rateFormats))
	args(root, "lab run", fixed(experimentNames))
	args(root, "lab shell", paths)
}

// completeFlag completes the flag name of the command at path (words after
// "tcpscope"), if both exist: a command another file drops is no error.
func completeFlag(root *cobra.Command, path, name string, f completeFunc) {
	if c := find(root, path); c != nil && c.Flags().Lookup(name) != nil {
		_ = c.RegisterFlagCompletionFunc(name, f)
	}
}

// args completes the first argument of the command at path.
func args(root *cobra.Command, path string, f completeFunc) {
	if c := find(root, path); c != nil {
		c.ValidArgsFunction = func(cmd *cobra.Command, args []string, word string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return f(cmd, args, word)
		}
	}
}

func find(root *cobra.Command, path string) *cobra.Command {
	c, rest, err := root.Find(strings.Fields(path))
	if err != nil || len(rest) > 0 || c.CommandPath() != "tcpscope "+path {
		return nil
	}
	return c
}

// fixed completes from a list (that needs no flags to compute), not files.
func fixed(list func() []string) completeFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return list(), cobra.ShellCompDirectiveNoFileComp
	}
}

// profileNames completes lab profile names, the --profiles file's too.
func profileNames(names func(profile.Set) []string) completeFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		lf := &labFlags{}
		if fl := cmd.Flag("profiles"); fl != nil {
			lf.profiles = fl.Value.String()
		}
		set, err := lf.load()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names(set), cobra.ShellCompDirectiveNoFileComp
	}
}

// experimentNames are the lab's experiments, each with its description.
func experimentNames() []string {
	var out []string
	for _, s := range experiment.Specs() {
		out = append(out, s.Name+"\t"+s.Description)
	}
	return out
}

// rateFormats are -f's values: model's rate formats and iperf3's JSON.
func rateFormats() []string {
	out := []string{string(model.RateAuto) + "\tbit/s, the prefix chosen per value", string(model.RateAutoBytes) + "\tbyte/s, the prefix chosen per value"}
	for _, f := range []model.RateFormat{model.RateKbit, model.RateMbit, model.RateGbit, model.RateTbit, model.RateKB, model.RateMB, model.RateGB, model.RateTB} {
		unit := strings.Fields(model.FormatRate(0, f)) // "0 Mbit/s"
		out = append(out, fmt.Sprintf("%c\tin %s", f, unit[len(unit)-1]))
	}
	return append(out, iperf3JSONFormat+"\tiperf3's -J document")
}
