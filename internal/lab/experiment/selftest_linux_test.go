package experiment_test

import (
	"context"
	"testing"

	"github.com/tcpscope/tcpscope/internal/lab/experiment"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
)

// The emulator's accuracy bounds hold on this machine (what `tcpscope lab
// selftest` prints).
func TestSelfTest(t *testing.T) {
	labtest.Require(t)
	checks, err := experiment.SelfTest(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 9 {
		t.Fatalf("%d checks", len(checks))
	}
	for _, c := range checks {
		t.Logf("%s: set %s, measured %s, bound %s", c.Name, c.Set, c.Measured, c.Bound)
		if !c.OK {
			t.Errorf("%s out of bounds", c.Name)
		}
	}
}
