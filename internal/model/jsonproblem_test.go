package model

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestJSONProblem(t *testing.T) {
	type doc struct {
		Start struct{ N int } `json:"start"`
	}
	for in, want := range map[string]string{
		"":                    `the input is empty`,
		`{"start":`:           `the JSON ends early`,
		`hello`:               `not valid JSON (at byte 1)`,
		`{"start":"x"}`:       `field "start" is a JSON string where a test document has another kind`,
		`[1]`:                 `a JSON array where a test document is an object`,
		`{"start":{"N":"x"}}`: `field "start.N" is a JSON string where a test document has another kind`,
	} {
		var d doc
		err := json.NewDecoder(strings.NewReader(in)).Decode(&d)
		if err == nil {
			t.Fatalf("%q decoded", in)
		}
		if got := JSONProblem(err, "a test document"); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	if got := JSONProblem(errors.New("other"), "a test document"); got != "not a test document" {
		t.Errorf("another error: %q", got)
	}
}
