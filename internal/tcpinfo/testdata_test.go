package tcpinfo

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current decoder")

// readHex reads kernel bytes saved by TestRecord: hex digits, 16 bytes a
// line after an "offset:" prefix, with '#' starting a comment.
func readHex(t testing.TB, path string) []byte {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for line := range strings.Lines(string(text)) {
		line, _, _ = strings.Cut(line, "#")
		if _, rest, ok := strings.Cut(line, ":"); ok {
			line = rest
		}
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

// formatHex is the inverse of readHex, with comment lines first.
func formatHex(b []byte, comments ...string) []byte {
	var out bytes.Buffer
	for _, c := range comments {
		fmt.Fprintf(&out, "# %s\n", c)
	}
	for off := 0; off < len(b); off += 16 {
		end := min(off+16, len(b))
		fmt.Fprintf(&out, "%04d: % x\n", off, b[off:end])
	}
	return out.Bytes()
}

// checkGolden compares v, as indented JSON, with the golden file at path,
// or rewrites the file when -update is given.
func checkGolden(t *testing.T, path string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := diffLines(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, d)
	}
}

// diffLines is a minimal line diff: good enough to point at the fields
// that changed in a golden file.
func diffLines(want, got string) string {
	if want == got {
		return ""
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&out, "line %d:\n-%s\n+%s\n", i+1, wl, gl)
		}
	}
	return out.String()
}
