package iperf3_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain lets more tests run at once than go test's default of one per
// CPU, unless -parallel says otherwise: the tests here that call
// t.Parallel are paced or wait on a timer (a few Mbit/s, a limit to
// expire), so they wait on the clock, not the CPU, and the full-speed
// ones never call it (they run alone, before the parallel ones).
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", "8")
	}
	os.Exit(m.Run())
}
