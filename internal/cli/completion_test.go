package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/hostinfo"
	"github.com/tcpscope/tcpscope/internal/lab/experiment"
	"github.com/tcpscope/tcpscope/internal/sockdiag"
)

// complete runs cobra's hidden __complete command, as the shell scripts
// cobra generates do, and returns the names offered (descriptions cut)
// and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, out, stderr := run(append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", args, code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var names []string
	for _, l := range lines[:len(lines)-1] {
		names = append(names, strings.SplitN(l, "\t", 2)[0])
	}
	return names, lines[len(lines)-1]
}

// Completion offers names, not only flags: experiments, lab paths and
// host profiles, the kernel's congestion controls, named network
// namespaces and -f's formats; never file names in their place.
func TestCompletionOfNames(t *testing.T) {
	var exps []string
	for _, s := range experiment.Specs() {
		exps = append(exps, s.Name)
	}
	ccs := hostinfo.Reader{}.CongestionControls()
	if len(ccs) == 0 {
		t.Fatal("no congestion controls in /proc/sys/net/ipv4/tcp_available_congestion_control")
	}
	for _, tc := range []struct {
		args []string
		want []string // all of them, in this order
	}{
		{[]string{"lab", "run", ""}, exps},
		{[]string{"lab", "run", "tuning", "--path", ""}, []string{"coast-to-coast", "dsl", "gigasunet-21ms", "lan-1g", "lossy-wan", "transatlantic", "vhp"}},
		{[]string{"lab", "run", "tuning", "--hosts", ""}, []string{"mistuned-2001", "stock", "tuned"}},
		{[]string{"lab", "shell", ""}, []string{"coast-to-coast", "dsl", "gigasunet-21ms", "lan-1g", "lossy-wan", "transatlantic", "vhp"}},
		{[]string{"lab", "shell", "vhp", "--hosts", ""}, []string{"mistuned-2001", "stock", "tuned"}},
		{[]string{"test", "127.0.0.1", "-C", ""}, ccs},
		{[]string{"diagnose", "--congestion", ""}, ccs},
		{[]string{"lab", "run", "tuning", "-C", ""}, ccs},
		{[]string{"watch", "--netns", ""}, sockdiag.NamespaceNames()},
		{[]string{"test", "-f", ""}, []string{"a", "A", "k", "m", "g", "t", "K", "M", "G", "T", "iperf3-json"}},
	} {
		got, directive := complete(t, tc.args...)
		if !slices.Equal(got, tc.want) {
			t.Errorf("tcpscope %s<TAB>: %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
		if directive != ":4" { // ShellCompDirectiveNoFileComp
			t.Errorf("tcpscope %s<TAB>: directive %s, want :4 (no file names)", strings.Join(tc.args, " "), directive)
		}
	}
	// A second experiment is not an argument lab run takes.
	if got, _ := complete(t, "lab", "run", "tuning", ""); len(got) != 0 {
		t.Errorf("lab run tuning <TAB> offers %q", got)
	}
}
