package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/tcpscope/tcpscope"

// allowed lists, per package, the internal packages it may import. Arrows
// point toward model; nothing imports cli but main. A new package must be
// added here, which is the point: its place in the design is a decision.
var allowed = map[string][]string{
	"cmd/tcpscope":     {"internal/cli"},
	"bench/conns":      {},
	"bench/soak":       {},
	"tools/testtiers":  {},
	"internal/cli":     {"*"},
	"internal/model":   {},
	"internal/tcpinfo": {"internal/model"},
	// The engine moves bytes and speaks no protocol; the server's port
	// (serve) is protocol-neutral; each protocol stands on them.
	"internal/engine":         {"internal/model", "internal/tcpinfo", "internal/fault"},
	"internal/serve":          {"internal/engine", "internal/fault", "internal/frontdoor", "internal/gate", "internal/limits", "internal/model", "internal/tcpinfo", "internal/token"},
	"internal/dial":           {"internal/engine", "internal/fault", "internal/model", "internal/tcpinfo"},
	"internal/perf":           {"internal/dial", "internal/engine", "internal/fault", "internal/gate", "internal/model", "internal/serve", "internal/tcpinfo", "internal/token"},
	"internal/perf/perftest":  {},
	"internal/iperf3":         {"internal/dial", "internal/engine", "internal/fault", "internal/gate", "internal/i3auth", "internal/limits", "internal/model", "internal/serve", "internal/tcpinfo"},
	"internal/limits":         {"internal/model"},
	"internal/health":         {},
	"internal/daemon":         {},
	"internal/token":          {},
	"internal/i3auth":         {},
	"internal/report":         {"internal/model", "internal/watch", "internal/columns"},
	"internal/lab":            {"internal/model", "internal/lab/emulator"},
	"internal/lab/emulator":   {"internal/model"},
	"internal/lab/labtest":    {"internal/lab", "internal/model"},
	"internal/diagnose":       {"internal/model", "internal/tcpmath"},
	"internal/hostinfo":       {"internal/model"},
	"internal/probe":          {"internal/model", "internal/tcpinfo"},
	"internal/sockdiag":       {"internal/model", "internal/sockdiag/inetdiag"},
	"internal/watch":          {"internal/model", "internal/diagnose", "internal/pace"},
	"internal/scope":          {"internal/columns", "internal/model", "internal/watch"},
	"internal/columns":        {},
	"internal/pace":           {},
	"internal/lab/profile":    {"internal/model", "internal/lab/emulator"},
	"internal/lab/precision":  {"internal/model", "internal/diagnose", "internal/lab", "internal/lab/emulator", "internal/lab/experiment", "internal/perf", "internal/serve", "internal/tcpmath"},
	"internal/lab/experiment": {"internal/model", "internal/report", "internal/stats", "internal/tcpmath", "internal/lab", "internal/lab/emulator", "internal/lab/profile", "internal/perf", "internal/serve", "internal/iperf3", "internal/diagnose"},
	"internal/stats":          {},
	"internal/archive":        {"internal/model"},
	"internal/archive/pgtest": {},
	"internal/tcpmath":        {"internal/model"},
	"internal/archtest":       {},
	"internal/golden":         {},
	"internal/frontdoor":      {},
	"internal/fault":          {},
	"internal/gate":           {"internal/fault", "internal/limits", "internal/model"},
	"internal/server":         {"internal/daemon", "internal/diagnose", "internal/fault", "internal/gate", "internal/health", "internal/i3auth", "internal/iperf3", "internal/limits", "internal/model", "internal/perf", "internal/serve", "internal/token"},
	"internal/measure":        {"internal/diagnose", "internal/hostinfo", "internal/iperf3", "internal/model", "internal/perf", "internal/probe"},
	"internal/interop":        {},
	"bench/interop":           {"internal/interop"},

	"internal/sockdiag/inetdiag": {"internal/model", "internal/tcpinfo"},
}

// pure packages do no I/O and never read the clock, so a saved run
// analyses the same anywhere.
var pure = map[string]bool{"internal/model": true, "internal/fault": true, "internal/stats": true, "internal/tcpmath": true, "internal/diagnose": true, "internal/limits": true, "internal/token": true,
	"internal/sockdiag/inetdiag": true}

var ioImports = []string{"os", "net", "syscall", "os/exec", "net/http", "database/sql", "golang.org/x/sys/unix",
	// Randomness from the system makes an analysis differ from run to
	// run; a pure package takes its random source as an argument.
	"crypto/rand"}

// impureTime are the functions of package time a pure package may not
// call: they read the clock or wait on it.
var impureTime = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

type pkg struct {
	dir     string
	imports map[string]bool
	docs    int
	files   []*ast.File
}

// sources calls fn with the path of every non-test .go file of the
// module, and its directory relative to the module's root (slashes).
// It skips what the go tool skips (testdata, directories whose names
// begin with "." or "_", nested modules) and npm's node_modules, never
// one of the project's own directories by its name: a package under a
// directory called web is checked as any other.
func sources(t *testing.T, fn func(path, rel string) error) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal("not at the module root")
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path == root {
				return nil
			}
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		return fn(path, filepath.ToSlash(rel))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T) map[string]*pkg {
	t.Helper()
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	sources(t, func(path, rel string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.ImportsOnly)
		if err != nil {
			return err
		}
		if pure[rel] {
			if f, err = parser.ParseFile(fset, path, nil, parser.ParseComments); err != nil {
				return err
			}
		}
		p := pkgs[rel]
		if p == nil {
			p = &pkg{dir: rel, imports: map[string]bool{}}
			pkgs[rel] = p
		}
		p.files = append(p.files, f)
		if f.Doc != nil && strings.HasPrefix(strings.TrimSpace(f.Doc.Text()), "Package "+f.Name.Name) ||
			f.Doc != nil && f.Name.Name == "main" && strings.HasPrefix(strings.TrimSpace(f.Doc.Text()), "Command ") {
			p.docs++
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			p.imports[path] = true
		}
		return nil
	})
	return pkgs
}

func TestImportRules(t *testing.T) {
	for dir, p := range load(t) {
		rules, ok := allowed[dir]
		if !ok {
			t.Errorf("%s: no import rule; add it to allowed in arch_test.go and to docs/ARCHITECTURE.md", dir)
			continue
		}
		for im := range p.imports {
			if !strings.HasPrefix(im, module+"/") {
				continue
			}
			target := strings.TrimPrefix(im, module+"/")
			if target == "internal/cli" && dir != "cmd/tcpscope" {
				t.Errorf("%s imports internal/cli: nothing but main may", dir)
			}
			if !slices.Contains(rules, "*") && !slices.Contains(rules, target) {
				t.Errorf("%s may not import %s (allowed: %v)", dir, target, rules)
			}
		}
	}
}

func TestPurePackages(t *testing.T) {
	for dir, p := range load(t) {
		if !pure[dir] {
			continue
		}
		for im := range p.imports {
			// Third-party code could do I/O behind our back; gonum's
			// numerics and go-toml's decoder (bytes in, values out) are
			// the dependencies known to be pure.
			thirdParty := strings.Contains(strings.Split(im, "/")[0], ".") && !strings.HasPrefix(im, module) &&
				!strings.HasPrefix(im, "gonum.org/v1/gonum/") && im != "github.com/pelletier/go-toml/v2"
			if slices.Contains(ioImports, im) || thirdParty {
				t.Errorf("%s is pure but imports %s", dir, im)
			}
		}
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && slices.Contains(impureTime, sel.Sel.Name) {
					t.Errorf("%s is pure but calls time.%s", dir, sel.Sel.Name)
				}
				return true
			})
		}
	}
}

func TestPackageDocs(t *testing.T) {
	for dir, p := range load(t) {
		switch {
		case p.docs == 0:
			t.Errorf("%s has no package doc comment", dir)
		case p.docs > 1:
			t.Errorf("%s has its package doc comment in %d files; keep one (doc.go)", dir, p.docs)
		}
	}
}

// compositionRoots wire every protocol together, and so may import both
// the native protocol and net/http.
var compositionRoots = map[string]bool{"internal/cli": true, "internal/server": true, "cmd/tcpscope": true}

// An HTTP package (one that imports net/http: the front door, the
// health check, and the page, ndt7, the API and metrics to come) stands
// on the engine and the server's port, never on the native protocol or
// the command line: the service half must not grow out of the client's.
func TestHTTPPackagesSpeakNoNativeProtocol(t *testing.T) {
	for dir, p := range load(t) {
		if !p.imports["net/http"] || compositionRoots[dir] {
			continue
		}
		for _, banned := range []string{"internal/perf", "internal/cli"} {
			if p.imports[module+"/"+banned] {
				t.Errorf("%s imports net/http and %s: an HTTP package may not", dir, banned)
			}
		}
	}
}
