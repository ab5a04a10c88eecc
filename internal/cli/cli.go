package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/lab"
)

// Version is tcpscope's release, stamped at build time with
// -ldflags "-X github.com/tcpscope/tcpscope/internal/cli.Version=...".
var Version = "0.1.0-dev"

// Exit codes, documented in the README. Scripts may rely on them.
const (
	ExitOK          = 0
	ExitFailure     = 1  // anything not listed below
	ExitUsage       = 2  // bad flags or arguments
	ExitRefused     = 3  // connection refused
	ExitUnreachable = 4  // name does not resolve, no route
	ExitTimeout     = 5  // the peer stopped answering
	ExitProtocol    = 6  // version mismatch, not a tcpscope server
	ExitBusy        = 7  // server busy or request over its limits
	ExitAborted     = 8  // the test broke off mid-way
	ExitSocket      = 9  // a socket option was refused (-C, -M, --fq-rate)
	ExitPrivilege   = 10 // needs root, or a system tool is missing
	ExitInUse       = 11 // the server's address is taken
	ExitInterrupted = 130
)

// usageError is a mistake on the command line.
type usageError struct {
	msg, hint string
}

func (e *usageError) Error() string { return e.msg }

func usagef(hint, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), hint: hint}
}

// failure is an error of the environment, not of the command line
// (exit 1), with a hint: a file that cannot be written, say.
type failure struct{ msg, hint string }

func (e *failure) Error() string { return e.msg }

// exitError carries a chosen exit code for an outcome that was already
// reported (an interrupted test prints its results, then exits 130).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Main runs tcpscope with args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return MainBuild(ctx, Build{}, args, stdout, stderr)
}

// MainBuild is Main for a binary whose main holds a linker stamp of its
// commit (tcpscope version prints it when Go's own VCS stamp is missing).
func MainBuild(ctx context.Context, stamp Build, args []string, stdout, stderr io.Writer) int {
	args = iperf3Habit(args)
	root := newRoot(ctx, args, stdout, stderr)
	build := thisBuild(stamp)
	root.Version = build.String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newVersionCmd(build, stdout))
	addCompletions(root)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra's own error: a command line this tool cannot parse is
		// a usage error, exit 2, as the README's table says.
		err = usagef("tcpscope --help lists the commands", "%v", err)
	}
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	code, line := errorLine(err)
	fmt.Fprintln(stderr, "tcpscope: "+line)
	return code
}

// iperf3Habit reads iperf3's way of choosing a mode: "tcpscope -c HOST
// ..." is "tcpscope test HOST ..." and "tcpscope -s ..." is "tcpscope
// server ...", the flags after them as the commands take them (they take
// iperf3's where they mean the same).
func iperf3Habit(args []string) []string {
	if len(args) == 0 {
		return args
	}
	switch a := args[0]; {
	case a == "-c" || a == "--client":
		return append([]string{"test"}, args[1:]...)
	case strings.HasPrefix(a, "--client="):
		return append([]string{"test", strings.TrimPrefix(a, "--client=")}, args[1:]...)
	case strings.HasPrefix(a, "-c") && len(a) > 2:
		return append([]string{"test", a[2:]}, args[1:]...)
	case a == "-s" || a == "--server":
		return append([]string{"server"}, args[1:]...)
	}
	return args
}

// errorLine is an error's exit code and its one-line message with the
// hint, as stderr shows it.
func errorLine(err error) (int, string) {
	code, hint := classify(err)
	line := oneLine(err.Error())
	// A hint of its own "try ..." (an older server's "try again when
	// ...") would read "try: try ...".
	if rest, ok := strings.CutPrefix(hint, "try again "); ok {
		hint = "run again " + rest
	} else if rest, ok := strings.CutPrefix(hint, "try "); ok {
		hint = rest
	}
	if hint != "" {
		line += " (try: " + hint + ")"
	}
	return code, line
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// classify maps an error to its exit code and hint.
func classify(err error) (int, string) {
	var pe *permissionError
	if errors.As(err, &pe) {
		return ExitPrivilege, pe.hint
	}
	var fe *failure
	if errors.As(err, &fe) {
		return ExitFailure, fe.hint
	}
	if errors.Is(err, lab.ErrNoNetem) {
		// A system facility missing, as a missing tool is (README: 10).
		return ExitPrivilege, "load sch_netem (modprobe sch_netem), or leave --backend at auto"
	}
	var ue *usageError
	if errors.As(err, &ue) {
		hint := ue.hint
		if hint == "" {
			hint = "tcpscope help"
		}
		return ExitUsage, hint
	}
	hint := fault.Phrase(fault.HintOf(err), flagOf)
	switch fault.CodeOf(err) {
	case fault.Refused:
		return ExitRefused, hint
	case fault.Unreachable:
		return ExitUnreachable, hint
	case fault.Timeout:
		return ExitTimeout, hint
	case fault.Version, fault.Protocol, fault.Unverified, fault.TLS:
		return ExitProtocol, hint
	case fault.Busy, fault.Limit, fault.Denied, fault.Shutdown:
		return ExitBusy, hint
	case fault.BadConfig:
		return ExitUsage, hint
	case fault.Aborted:
		return ExitAborted, hint
	case fault.Socket:
		return ExitSocket, hint
	case fault.AddrInUse:
		return ExitInUse, hint
	}
	return ExitFailure, hint
}

// newRoot builds the command tree; args are the command line, for the
// test command to see what output a line it cannot parse asked for.
func newRoot(ctx context.Context, args []string, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "tcpscope",
		Short: "Measure, instrument and explain TCP transfers",
		Long: `tcpscope finds out why a TCP transfer is slower than the link: it runs
memory-to-memory tests like iperf3 and shows both ends' kernel TCP state
(cwnd, RTT, windows, retransmissions, what limited the sender) live.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef(c.CommandPath()+" --help", "%v", err)
	})
	root.AddCommand(withProfiles(newServerCmd(args, stdout, stderr)), withProfiles(newTestCmd(args, stdout, stderr)), newExplainCmd(stdout), newCalcCmd(stdout), newHostCmd(stdout), newDiagnoseCmd(stdout, stderr), newWatchCmd(stdout, stderr), newReplayCmd(stdout), newLabCmd(stdout, stderr), newTokenCmd(stdout), newManCmd(stdout))
	return root
}
