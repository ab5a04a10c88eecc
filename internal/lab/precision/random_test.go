package precision

import (
	"slices"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/lab"
)

// TestRandomDraws: a seed gives the same scenarios every time, each
// named by its seed and index; every cause is drawn; the kernel backend
// draws none that only the emulator makes and no rate above 300 Mbit/s;
// and a draw's physics margin holds (a window or buffer under the BDP,
// a loss bound and a policed rate under half the path's rate).
func TestRandomDraws(t *testing.T) {
	a, b := Random(7, 300, lab.UseEmulator), Random(7, 300, lab.UseEmulator)
	if !slices.EqualFunc(a, b, func(x, y Scenario) bool { return x.Name == y.Name && x.Seed == y.Seed }) {
		t.Fatal("the same seed drew different scenarios")
	}
	if c := Random(8, 1, lab.UseEmulator); c[0].Name == a[0].Name {
		t.Errorf("seeds 7 and 8 drew the same first scenario: %s", a[0].Name)
	}
	seen := map[string]bool{}
	for i, s := range a {
		if !strings.HasPrefix(s.Name, "r7#") || !strings.Contains(s.Name, ":") {
			t.Errorf("scenario %d named %q", i, s.Name)
		}
		kind := strings.Fields(strings.SplitN(s.Name, ": ", 2)[1])[0]
		seen[strings.TrimSuffix(kind, ",")] = true
		if s.Healthy == (s.Want != "") {
			t.Errorf("%s: healthy %v and wants %q", s.Name, s.Healthy, s.Want)
		}
	}
	for _, c := range causes {
		if !seen[c] {
			t.Errorf("300 draws never drew %s", c)
		}
	}
	for _, s := range Random(9, 300, lab.UseKernel) {
		for _, d := range []struct{ rate, police float64 }{{float64(s.AtoB.Rate), 0}, {float64(s.BtoA.Rate), 0}} {
			if d.rate > float64(300*mbit) {
				t.Errorf("%s: a kernel path at %v", s.Name, d.rate)
			}
		}
		if s.AtoB.Reorder > 0 || s.BtoA.Reorder > 0 || s.AtoB.GE != nil || s.BtoA.GE != nil {
			t.Errorf("%s: the kernel backend cannot make it", s.Name)
		}
		if s.Backend != lab.UseKernel {
			t.Errorf("%s: backend %v", s.Name, s.Backend)
		}
	}
}
