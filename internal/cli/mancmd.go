package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd writes man pages for every command, from the commands
// themselves: the pages cannot drift from the flags.
func newManCmd(stdout io.Writer) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "man --dir DIR",
		Short: "Write man pages for every command (tcpscope.1, tcpscope-server.1, ...) into DIR",
		Args:  noArgs("tcpscope man --dir share/man/man1"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usagef("say where: tcpscope man --dir share/man/man1", "man needs --dir")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("make %s: %w", dir, err)
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			// A fixed date keeps the pages the same from build to build
			// of one release.
			date := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			header := &doc.GenManHeader{Section: "1", Source: "tcpscope " + Version, Manual: "tcpscope manual", Date: &date}
			if err := doc.GenManTree(root, header, dir); err != nil {
				return fmt.Errorf("write man pages: %w", err)
			}
			fmt.Fprintf(stdout, "man pages written to %s\n", dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write the pages into")
	return cmd
}
