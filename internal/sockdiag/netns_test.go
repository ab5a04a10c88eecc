package sockdiag

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Named namespaces are the files of ip netns's directories, once each
// (/var/run is often a link to /run), sorted; a missing directory has none.
func TestNamespaceNames(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for dir, names := range map[string][]string{a: {"lab-b", "lab-a"}, b: {"lab-a", "other"}} {
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := namespaceNamesIn(a, b, filepath.Join(a, "missing"))
	if want := []string{"lab-a", "lab-b", "other"}; !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
}
