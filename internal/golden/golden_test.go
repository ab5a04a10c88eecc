package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	if d := Diff("a\nb\n", "a\nb\n"); d != "" {
		t.Errorf("equal texts differ: %q", d)
	}
	d := Diff("a\nb\nc\n", "a\nB\nc\nd\n")
	for _, want := range []string{"line 2:\n-b\n+B\n", "line 4:\n-\n+d\n", "line 5:\n+\n"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff %q lacks %q", d, want)
		}
	}
	if strings.Contains(d, "line 1:") || strings.Contains(d, "line 3:") {
		t.Errorf("diff shows equal lines: %q", d)
	}
	var want, got strings.Builder
	for i := range 100 {
		want.WriteString("x\n")
		got.WriteString(strings.Repeat("y", i%3+1) + "\n")
	}
	if d := Diff(want.String(), got.String()); strings.Count(d, "line ") != maxDiffLines || !strings.HasSuffix(d, "(more lines differ)\n") {
		t.Errorf("a long diff is not bounded at %d lines:\n%s", maxDiffLines, d)
	}
}

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden")
	check := func(got string) *fakeT {
		ft := &fakeT{TB: t}
		func() {
			defer func() { _ = recover() }() // a fatal report stops Check
			Check(ft, path, []byte(got))
		}()
		return ft
	}
	if ft := check("x\n"); !ft.fatal || !strings.Contains(ft.msg, "-update writes it") {
		t.Errorf("a missing golden file: fatal %v, %q", ft.fatal, ft.msg)
	}
	if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ft := check("x\n"); ft.fatal || ft.msg != "" {
		t.Errorf("an equal output was reported: %q", ft.msg)
	}
	if ft := check("y\n"); ft.fatal || !strings.Contains(ft.msg, "-x\n+y") {
		t.Errorf("a different output: fatal %v, %q", ft.fatal, ft.msg)
	}
}

// fakeT records what Check reports instead of failing the test; its
// Fatalf stops Check as testing's does, by leaving the call.
type fakeT struct {
	testing.TB
	fatal bool
	msg   string
}

func (f *fakeT) Helper()      {}
func (f *fakeT) Name() string { return "TestX" }
func (f *fakeT) Errorf(format string, args ...any) {
	f.msg += fmt.Sprintf(format, args...)
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.fatal, f.msg = true, fmt.Sprintf(format, args...)
	panic(f)
}
