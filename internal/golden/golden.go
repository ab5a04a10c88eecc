// Package golden compares what a test produced with a file kept beside
// the test (its golden file), and rewrites the file instead when the
// tests run with -update:
//
//	go test ./internal/report -run TestText -update
//
// It is imported by tests only. One flag serves every package's golden
// files, so a package whose tests compare against golden files registers
// -update once, through this package.
package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files from what the code produces now")

// Updating reports whether the tests run with -update: a test that
// records more than one file may want to know.
func Updating() bool { return *update }

// Check compares got with the golden file at path, or, with -update,
// writes got there (and the directories it needs).
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update writes it)", err, t.Name())
	}
	if d := Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs from what the code produces (-golden +now; -update rewrites it):\n%s", path, d)
	}
}

// maxDiffLines bounds the lines Diff shows: the first differences say
// what changed, a whole rewritten file does not.
const maxDiffLines = 40

// Diff is a line-by-line difference of want and got, each line that
// differs shown as "-want" and "+got" under its number; "" when they
// are equal. Lines are compared at the same number, which is all a
// golden file's change needs to be found.
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	shown := 0
	for i := range max(len(w), len(g)) {
		wl, wok := at(w, i)
		gl, gok := at(g, i)
		if wl == gl && wok == gok {
			continue
		}
		if shown == maxDiffLines {
			fmt.Fprintf(&out, "(more lines differ)\n")
			break
		}
		shown++
		fmt.Fprintf(&out, "line %d:\n", i+1)
		if wok {
			fmt.Fprintf(&out, "-%s\n", wl)
		}
		if gok {
			fmt.Fprintf(&out, "+%s\n", gl)
		}
	}
	return out.String()
}

func at(lines []string, i int) (string, bool) {
	if i < len(lines) {
		return lines[i], true
	}
	return "", false
}
