// Command testtiers runs go test for make test and says which tests did
// not run, and why: a user without root sees that the namespace tier was
// skipped, where go test's own output says nothing of skips.
//
//	go run ./tools/testtiers [-go go] [-json FILE] -- [go test flags and packages]
//
// It runs go test -json, prints what plain go test would (each package's
// ok, FAIL or "?" line, and the output of tests that fail), keeps the
// events in FILE, then prints one line grouping the skipped tests by the
// reason they gave, and exits with go test's exit code.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

func main() {
	goCmd := flag.String("go", "go", "the go command")
	jsonFile := flag.String("json", "", "also write go test's JSON events to this file")
	flag.Parse()
	args := append([]string{"test", "-json"}, flag.Args()...)
	cmd := exec.Command(*goCmd, args...)
	cmd.Stderr = os.Stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtiers:", err)
		os.Exit(1)
	}
	var record io.Writer = io.Discard
	if *jsonFile != "" {
		f, err := os.Create(*jsonFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testtiers:", err)
			os.Exit(1)
		}
		defer f.Close()
		record = f
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testtiers:", err)
		os.Exit(1)
	}
	r := newRenderer(os.Stdout)
	if err := r.read(io.TeeReader(events, record)); err != nil {
		fmt.Fprintln(os.Stderr, "testtiers: reading go test's events:", err)
	}
	werr := cmd.Wait()
	fmt.Println(r.summary(*jsonFile))
	var ee *exec.ExitError
	switch {
	case werr == nil:
		os.Exit(0)
	case errors.As(werr, &ee) && ee.ExitCode() > 0:
		os.Exit(ee.ExitCode())
	default:
		fmt.Fprintln(os.Stderr, "testtiers: go test:", werr)
		os.Exit(1)
	}
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output
	Test       string
	Output     string
}

// module is this module's path, left out of package names in the summary.
const module = "github.com/tcpscope/tcpscope/"

type testKey struct{ pkg, test string }

// renderer turns go test's events back into its plain output, and
// collects the skipped tests.
type renderer struct {
	w io.Writer
	// out holds each running test's output until it ends: printed if it
	// fails (or its package does while it runs), dropped otherwise.
	out map[testKey][]string
	// skipped are the skipped tests with their reasons.
	skipped []skip
}

type skip struct{ pkg, test, reason string }

func newRenderer(w io.Writer) *renderer {
	return &renderer{w: w, out: map[testKey][]string{}}
}

func (r *renderer) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(r.w, sc.Text()) // not an event: as go test said it
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

// framing are the lines -v adds, which plain go test does not print.
var framing = regexp.MustCompile(`^\s*=== (RUN|PAUSE|CONT|NAME)\s`)

func (r *renderer) event(e event) {
	k := testKey{e.Package, e.Test}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.w, e.Output)
	case e.Action == "output" && e.Test == "":
		if strings.HasPrefix(e.Output, "FAIL") {
			// A panic or a timeout names no test's end: what the tests
			// still running said comes before the package's verdict.
			r.flushPackage(e.Package)
		}
		if e.Output != "PASS\n" { // plain go test prints only the ok line
			fmt.Fprint(r.w, e.Output)
		}
	case e.Action == "output":
		if !framing.MatchString(e.Output) {
			r.out[k] = append(r.out[k], e.Output)
		}
	case e.Action == "fail" && e.Test != "":
		r.flush(k)
	case e.Action == "skip" && e.Test != "":
		r.skipped = append(r.skipped, skip{e.Package, e.Test, reason(r.out[k])})
		delete(r.out, k)
	case e.Action == "pass" && e.Test != "":
		delete(r.out, k)
	case e.Action == "fail":
		r.flushPackage(e.Package)
	}
}

// flushPackage prints the output of pkg's tests still running.
func (r *renderer) flushPackage(pkg string) {
	var keys []testKey
	for k := range r.out {
		if k.pkg == pkg {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b testKey) int { return strings.Compare(a.test, b.test) })
	for _, k := range keys {
		r.flush(k)
	}
}

func (r *renderer) flush(k testKey) {
	for _, l := range r.out[k] {
		fmt.Fprint(r.w, l)
	}
	delete(r.out, k)
}

// logPrefix is t.Log's "    file_test.go:12: ".
var logPrefix = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// reason is what a skipped test said last before "--- SKIP".
func reason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		return logPrefix.ReplaceAllString(l, "")
	}
	return "no reason given"
}

// summary is the one line on the skipped tests: how many, grouped by
// reason, most first, with the packages of each.
func (r *renderer) summary(jsonFile string) string {
	if len(r.skipped) == 0 {
		return "testtiers: every tier ran, no test skipped"
	}
	type group struct {
		reason string
		n      int
		pkgs   []string
	}
	var groups []*group
	for _, s := range r.skipped {
		i := slices.IndexFunc(groups, func(g *group) bool { return g.reason == s.reason })
		if i < 0 {
			groups = append(groups, &group{reason: s.reason})
			i = len(groups) - 1
		}
		g := groups[i]
		g.n++
		pkg := strings.TrimPrefix(s.pkg, module)
		if !slices.Contains(g.pkgs, pkg) {
			g.pkgs = append(g.pkgs, pkg)
		}
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return b.n - a.n })
	var parts []string
	for _, g := range groups {
		pkgs := g.pkgs
		if len(pkgs) > 3 {
			pkgs = append(slices.Clip(pkgs[:3]), "…")
		}
		parts = append(parts, fmt.Sprintf("%d in %s: %s", g.n, strings.Join(pkgs, ", "), g.reason))
	}
	where := ""
	if jsonFile != "" {
		where = " (each in " + jsonFile + ")"
	}
	return fmt.Sprintf("testtiers: %d tests skipped%s: %s", len(r.skipped), where, strings.Join(parts, "; "))
}
