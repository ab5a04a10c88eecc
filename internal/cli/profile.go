package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/pflag"
)

// profileFlags are the developer flags --cpuprofile and --memprofile of
// test and server: pprof profiles of the process, to find where its CPU
// per byte goes (go tool pprof FILE). Hidden from --help: they measure
// tcpscope, not the network.
type profileFlags struct {
	cpu, mem string
}

func (p *profileFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&p.cpu, "cpuprofile", "", "write a pprof CPU profile of this process to FILE (developers)")
	fl.StringVar(&p.mem, "memprofile", "", "write a pprof allocation profile of this process to FILE at its end (developers)")
	_ = fl.MarkHidden("cpuprofile")
	_ = fl.MarkHidden("memprofile")
}

// start starts the CPU profile; stop, which the caller defers, ends it
// and writes the allocation profile.
func (p *profileFlags) start(stderr io.Writer) (stop func(), err error) {
	var cpu *os.File
	if p.cpu != "" {
		if cpu, err = os.Create(p.cpu); err != nil {
			return nil, usagef("give a file tcpscope may write", "--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("start the CPU profile: %w", err)
		}
	}
	if p.mem != "" {
		// Every allocation, not one per 512 KiB: a per-read allocation
		// must show however small.
		runtime.MemProfileRate = 1
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		if p.mem == "" {
			return
		}
		f, err := os.Create(p.mem)
		if err != nil {
			fmt.Fprintf(stderr, "tcpscope: --memprofile: %v\n", err)
			return
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			fmt.Fprintf(stderr, "tcpscope: --memprofile: %v\n", err)
		}
	}, nil
}
