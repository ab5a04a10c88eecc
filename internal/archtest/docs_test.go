package archtest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureDocMirrorsRules keeps docs/ARCHITECTURE.md's table of
// what each package may import the same as the allowed map: a reader of
// the doc sees the rules the build enforces.
func TestArchitectureDocMirrorsRules(t *testing.T) {
	data, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "### What each package may import")
	if start < 0 {
		t.Fatal(`docs/ARCHITECTURE.md has no "### What each package may import" section`)
	}
	section := doc[start:]
	if end := strings.Index(section[4:], "\n#"); end >= 0 {
		section = section[:end+4]
	}
	code := regexp.MustCompile("`([^`]+)`")
	documented := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 4 || !strings.Contains(cells[1], "`") {
			continue
		}
		var targets []string
		switch v := strings.TrimSpace(cells[2]); {
		case v == "none":
			targets = []string{}
		case strings.Contains(v, "(`*`)"):
			targets = []string{"*"}
		default:
			for _, m := range code.FindAllStringSubmatch(v, -1) {
				targets = append(targets, m[1])
			}
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			documented[m[1]] = targets
		}
	}
	for pkg, want := range allowed {
		got, ok := documented[pkg]
		if !ok {
			t.Errorf("docs/ARCHITECTURE.md: no row for %s (may import %v)", pkg, want)
			continue
		}
		a, b := slices.Clone(want), slices.Clone(got)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Errorf("docs/ARCHITECTURE.md: %s may import %v, the doc says %v", pkg, a, b)
		}
	}
	for pkg := range documented {
		if _, ok := allowed[pkg]; !ok {
			t.Errorf("docs/ARCHITECTURE.md: row for %s, which has no rule (or no longer exists)", pkg)
		}
	}
}
