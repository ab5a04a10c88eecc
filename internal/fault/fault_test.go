package fault

import (
	"errors"
	"fmt"
	"testing"
)

// A code and a hint survive wrapping; an error that is no Error has
// neither.
func TestCodeAndHintThroughWrapping(t *testing.T) {
	cause := errors.New("connection reset")
	err := fmt.Errorf("run: %w", &Error{Code: Aborted, Msg: "test broke off", Hint: "run again", Err: cause})
	if CodeOf(err) != Aborted || HintOf(err) != "run again" || !errors.Is(err, cause) {
		t.Errorf("code %q, hint %q, is cause %v", CodeOf(err), HintOf(err), errors.Is(err, cause))
	}
	if got := err.Error(); got != "run: test broke off: connection reset" {
		t.Errorf("message %q", got)
	}
	if CodeOf(cause) != "" || HintOf(cause) != "" || CodeOf(nil) != "" {
		t.Error("a plain error has a code or a hint")
	}
	if e := Errorf(Busy, "later", "%d running", 3); e.Error() != "3 running" || e.Code != Busy || e.Hint != "later" {
		t.Errorf("Errorf: %+v", e)
	}
}

// A hint's fields are phrased by the front end: its name for each, or
// the field itself in backquotes where it has none; text without braces
// is left alone.
func TestPhrase(t *testing.T) {
	flags := func(f string) string { return map[string]string{"parallel": "-P", "duration_ns": "-t"}[f] }
	for _, c := range []struct{ hint, want string }{
		{"use {parallel} between 1 and 128", "use -P between 1 and 128"},
		{"use {duration_ns} and {omit_ns} of at most 24 hours", "use -t and `omit_ns` of at most 24 hours"},
		{"run again later", "run again later"},
		{"an unclosed {brace", "an unclosed {brace"},
		{"", ""},
	} {
		if got := Phrase(c.hint, flags); got != c.want {
			t.Errorf("Phrase(%q) = %q, want %q", c.hint, got, c.want)
		}
	}
}
