package cli

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// withProfiles gives cmd the developer flags --cpuprofile FILE and
// --memprofile FILE (hidden from help): a pprof profile of the whole
// command's run, to see where an engine's time and allocations go in the
// real binary.
func withProfiles(cmd *cobra.Command) *cobra.Command {
	var cpu, mem string
	fl := cmd.Flags()
	fl.StringVar(&cpu, "cpuprofile", "", "developer: write a CPU profile (pprof) of the run to FILE")
	fl.StringVar(&mem, "memprofile", "", "developer: write a heap profile (pprof, allocations included) at the run's end to FILE")
	_ = fl.MarkHidden("cpuprofile")
	_ = fl.MarkHidden("memprofile")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) (err error) {
		if cpu != "" {
			f, err := os.Create(cpu)
			if err != nil {
				return &failure{msg: fmt.Sprintf("--cpuprofile: %v", err), hint: "give a file that can be written"}
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				return fmt.Errorf("start CPU profile: %w", err)
			}
			defer func() {
				pprof.StopCPUProfile()
				if cerr := f.Close(); err == nil && cerr != nil {
					err = fmt.Errorf("write CPU profile: %w", cerr)
				}
			}()
		}
		if mem != "" {
			f, err := os.Create(mem)
			if err != nil {
				return &failure{msg: fmt.Sprintf("--memprofile: %v", err), hint: "give a file that can be written"}
			}
			defer func() {
				runtime.GC() // the heap as of the run's end
				werr := pprof.Lookup("allocs").WriteTo(f, 0)
				if cerr := f.Close(); werr == nil {
					werr = cerr
				}
				if err == nil && werr != nil {
					err = fmt.Errorf("write heap profile: %w", werr)
				}
			}()
		}
		return run(c, args)
	}
	return cmd
}
