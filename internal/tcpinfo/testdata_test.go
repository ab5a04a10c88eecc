package tcpinfo

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/golden"
)

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

// checkGolden compares v, as indented JSON, with the golden file at path
// (go test -update rewrites it).
func checkGolden(t *testing.T, path string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, path, append(got, '\n'))
}
