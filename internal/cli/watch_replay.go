package cli

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/watch"
)

func newReplayCmd(stdout io.Writer) *cobra.Command {
	var (
		asJSON bool
		target model.Bitrate
	)
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Re-render and re-diagnose a recording made with 'tcpscope watch --record'",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("tcpscope replay FILE", "replay needs one recording, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := os.Open(args[0])
			if err != nil {
				return usagef("give the file 'tcpscope watch --record' wrote", "%v", err)
			}
			defer in.Close()
			show := frameView(stdout, asJSON, terminalWidth(stdout))
			t := &watch.Tracker{Window: watch.DiagWindow}
			// The diagnosis is made again, as it was live: the same
			// window, recomputed as often, on the recorded clock.
			running := &watch.Running{Options: diagnose.Options{Target: target}, Every: watch.DiagEvery}
			err = watch.Replay(in, t, func(fr watch.Frame) error {
				running.Attach(t, &fr)
				return show(fr)
			})
			if err != nil {
				return usagef("give the file 'tcpscope watch --record' wrote", "%s: %v", args[0], err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json-stream", false, "print each sample as a JSON line")
	cmd.Flags().Var(rate{&target}, "target-rate", "the rate you expect; the diagnosis sizes its fixes for it")
	return cmd
}
