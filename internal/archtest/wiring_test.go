package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCLIIsWiring keeps internal/cli to flags, config and wiring: it opens
// no socket and speaks no protocol of its own. From net it may use only
// the address-string helpers (a flag's HOST:PORT), from syscall only
// signal numbers; HTTP, TLS, certificates and raw system calls belong to
// the packages it wires (perf, health, probe, sockdiag).
func TestCLIIsWiring(t *testing.T) {
	forbidden := []string{"net/http", "crypto/tls", "crypto/x509", "golang.org/x/sys/unix"}
	allowedSel := map[string]func(string) bool{
		"net":     func(s string) bool { return s == "SplitHostPort" || s == "JoinHostPort" },
		"syscall": func(s string) bool { return strings.HasPrefix(s, "SIG") },
	}
	files, err := filepath.Glob("../cli/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		local := map[string]string{} // local name → import path, for net and syscall
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			for _, bad := range forbidden {
				if path == bad {
					t.Errorf("%s imports %s: cli wires packages that do I/O, it does none of its own", filepath.Base(name), path)
				}
			}
			if _, ok := allowedSel[path]; ok {
				n := path
				if im.Name != nil {
					n = im.Name.Name
				}
				local[n] = path
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if path, ok := local[id.Name]; ok && !allowedSel[path](sel.Sel.Name) {
				t.Errorf("%s: %s uses %s.%s: sockets and system calls belong to the packages cli wires", fset.Position(sel.Pos()), filepath.Base(name), path, sel.Sel.Name)
			}
			return true
		})
	}
}
