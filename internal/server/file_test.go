package server

import (
	"reflect"
	"strings"
	"testing"
)

// A file's settings come back in its order, as the command line would
// give them: lists as repetitions, numbers and booleans as text.
func TestParseFile(t *testing.T) {
	known := func(n string) bool { return n != "nope" }
	got, err := ParseFile([]byte(`# comment
listen = ":5201"
token-key = ["a.pem", "b.pem"]
'json-log' = true
max-tests = 64
skew = 2.5
`), known)
	if err != nil {
		t.Fatal(err)
	}
	want := []Setting{{"listen", []string{":5201"}}, {"token-key", []string{"a.pem", "b.pem"}}, {"json-log", []string{"true"}},
		{"max-tests", []string{"64"}}, {"skew", []string{"2.5"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for body, msg := range map[string]string{
		"listen = \":1\"\nnope = 1\n": `line 2: unknown setting "nope"`,
		"a = [[1, 2]]\n":              "a list of lists",
		"a = 1979-05-27\n":            "give a string, number, boolean or list",
	} {
		if _, err := ParseFile([]byte(body), known); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", body, err, msg)
		}
	}
}
