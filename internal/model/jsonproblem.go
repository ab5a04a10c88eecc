package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// JSONProblem says in plain words why JSON input did not decode as kind
// (what was expected, with its article: "a tcpscope result", "an iperf3
// -J document"), without encoding/json's Go type names: a user once saw
// "Go value of type model.Run". Every reader of a document a user hands
// tcpscope words its refusal with it.
func JSONProblem(err error, kind string) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "the input is empty"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends early"
	case errors.As(err, &syn):
		return fmt.Sprintf("not valid JSON (at byte %d)", syn.Offset)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Sprintf("field %q is a JSON %s where %s has another kind", typ.Field, typ.Value, kind)
	case errors.As(err, &typ):
		return fmt.Sprintf("a JSON %s where %s is an object", typ.Value, kind)
	}
	return "not " + kind
}
