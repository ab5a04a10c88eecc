package archtest

import (
	"go/build/constraint"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlatformPairs keeps OS-specific code in one shape: a file
// X_linux.go beside X_other.go, the latter built for every other system
// (//go:build !linux), so the non-Linux side of each is found at a glance
// and compiles (make vet vets the tree for darwin). No other suffix or
// build constraint is used outside tests.
func TestPlatformPairs(t *testing.T) {
	files := map[string]bool{}
	var names []string
	sources(t, func(path, _ string) error {
		files[path] = true
		names = append(names, path)
		return nil
	})
	fset := token.NewFileSet()
	for _, rel := range names {
		base := strings.TrimSuffix(rel, ".go")
		f, err := parser.ParseFile(fset, rel, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		var expr constraint.Expr
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if constraint.IsGoBuild(c.Text) {
					if expr, err = constraint.Parse(c.Text); err != nil {
						t.Errorf("%s: %v", rel, err)
					}
				}
			}
		}
		switch {
		case strings.HasSuffix(base, "_linux"):
			if expr != nil {
				t.Errorf("%s: a _linux.go file needs no build constraint", rel)
			}
			if !files[strings.TrimSuffix(base, "_linux")+"_other.go"] {
				t.Errorf("%s has no %s_other.go beside it", rel, filepath.Base(strings.TrimSuffix(base, "_linux")))
			}
		case strings.HasSuffix(base, "_other"):
			if expr == nil || expr.String() != "!linux" {
				t.Errorf("%s: an _other.go file is built with //go:build !linux", rel)
			}
			if !files[strings.TrimSuffix(base, "_other")+"_linux.go"] {
				t.Errorf("%s has no %s_linux.go beside it", rel, filepath.Base(strings.TrimSuffix(base, "_other")))
			}
		default:
			if expr != nil {
				t.Errorf("%s: platform code goes in an X_linux.go / X_other.go pair, not behind //go:build %s", rel, expr)
			}
			for _, suffix := range []string{"_windows", "_darwin", "_unix", "_bsd", "_freebsd", "_amd64", "_arm64"} {
				if strings.HasSuffix(base, suffix) {
					t.Errorf("%s: platform code goes in an X_linux.go / X_other.go pair", rel)
				}
			}
		}
	}
}
