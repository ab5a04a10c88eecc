package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/experiment"
)

func newLabShellCmd(lf *labFlags, stdout, stderr io.Writer) *cobra.Command {
	var hosts string
	cmd := &cobra.Command{
		Use:   "shell PATH",
		Short: "Open a shell on host A of a ready lab path, a tcpscope server on B",
		Long: `Build the named path between two lab hosts, start a tcpscope server on
host B, and open a shell on host A. Run anything there (tcpscope test $B,
iperf3, ss -ti, your own program); exit the shell to take the lab down.
$B is host B's address; 'ip netns exec $NS_B CMD' runs CMD on host B.`,
		Example: `  sudo tcpscope lab shell transatlantic
  sudo tcpscope lab shell vhp --hosts mistuned-2001`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("tcpscope lab profiles lists the paths", "lab shell needs one path name")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			self, _ := os.Executable()
			return labShell(cmd.Context(), lf, args[0], hosts, self, stdout, stderr)
		},
	}
	cmd.Flags().StringVar(&hosts, "hosts", "stock", "host tuning of both ends")
	return cmd
}

// labShell runs the lab shell; self is this program (os.Executable), whose
// directory leads the shell's PATH so that "tcpscope test $B" finds it
// when it is not installed.
func labShell(ctx context.Context, lf *labFlags, pathName, hostName, self string, stdout, stderr io.Writer) error {
	set, err := lf.load()
	if err != nil {
		return err
	}
	path, err := set.Path(pathName)
	if err != nil {
		return usagef("tcpscope lab profiles lists them", "%v", err)
	}
	host, err := set.Host(hostName)
	if err != nil {
		return usagef("tcpscope lab profiles lists them", "%v", err)
	}
	if err := labCheck(); err != nil {
		return err
	}
	backend, err := lf.parseBackend()
	if err != nil {
		return err
	}
	h := host.For(&path)
	cfg := experiment.PairConfig(path, h, h)
	cfg.Backend = backend
	pair, err := lab.NewPair(ctx, cfg)
	if err != nil {
		return fmt.Errorf("build the lab: %w", err)
	}
	defer pair.Close()
	_, stop, err := experiment.Serve(ctx, pair, 5201, Version)
	if err != nil {
		return err
	}
	defer stop()

	fmt.Fprintf(stdout, "lab: %s (%s) between host A %s and host B %s, hosts %s, carried by %s\n",
		path.Name, path.Description, pair.A.Addr, pair.B.Addr, host.Name, pair.Backend())
	fmt.Fprintf(stdout, "lab: tcpscope server on B:5201. Try: tcpscope test $B -t 5    (exit the shell to take the lab down)\n")
	shell := os.Getenv("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	c := pair.A.Command(context.Background(), shell)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, stdout, stderr
	c.Env = append(os.Environ(), "A="+pair.A.Addr.String(), "B="+pair.B.Addr.String(), "NS_A="+pair.A.Name, "NS_B="+pair.B.Name,
		"TCPSCOPE_LAB="+path.Name, "PS1=[lab "+path.Name+" A] \\w \\$ ")
	if self != "" {
		c.Env = append(pathFirst(c.Env, filepath.Dir(self)), "TCPSCOPE="+self)
	}
	err = c.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return fmt.Errorf("shell: %w", err)
	}
	fmt.Fprintln(stdout, "lab: taken down")
	return nil
}

// pathFirst is env with dir first on its PATH (and no second PATH: the
// shell would take either).
func pathFirst(env []string, dir string) []string {
	path := dir
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, "PATH="); ok {
			if rest != "" {
				path = dir + string(os.PathListSeparator) + rest
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PATH="+path)
}
