package server

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Setting is one setting of a --config file: a flag's name (without its
// dashes) and its values as the command line would give them, one per
// repetition.
type Setting struct {
	Name   string
	Values []string
}

// ParseFile reads a --config file: TOML of flat settings whose keys are
// the server's long flag names (listen = ":5201", limits =
// "/etc/tcpscope/limits.toml", token-key = ["a.pem", "b.pem"], json-log
// = true, idle-timeout = "10m"). known says whether a name is a flag
// the file may set; any other name is an error with its line, so that a
// misspelt setting is not silently ignored. Settings come back in the
// file's order.
func ParseFile(data []byte, known func(name string) bool) ([]Setting, error) {
	var m map[string]any
	dec := toml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, fmt.Errorf("line %d: %s", row, de.Error())
		}
		return nil, err
	}
	var out []Setting
	for _, name := range keysInOrder(data, m) {
		line := lineOf(data, name)
		if _, table := m[name].(map[string]any); table {
			return nil, fmt.Errorf("line %d: [%s] is a table: the settings are flat (no [sections]; a limits file takes classes)", line, name)
		}
		if !known(name) {
			return nil, fmt.Errorf("line %d: unknown setting %q (the settings are tcpscope server's flags, without --)", line, name)
		}
		values, err := flagValues(m[name])
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", line, name, err)
		}
		out = append(out, Setting{Name: name, Values: values})
	}
	return out, nil
}

// flagValues is a TOML value as the command line gives it.
func flagValues(v any) ([]string, error) {
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case bool:
		return []string{strconv.FormatBool(v)}, nil
	case int64:
		return []string{strconv.FormatInt(v, 10)}, nil
	case float64:
		return []string{strconv.FormatFloat(v, 'f', -1, 64)}, nil
	case []any:
		var out []string
		for _, e := range v {
			if _, nested := e.([]any); nested {
				return nil, errors.New("a list of lists")
			}
			vs, err := flagValues(e)
			if err != nil {
				return nil, err
			}
			out = append(out, vs...)
		}
		return out, nil
	case map[string]any:
		return nil, errors.New("a table in a list")
	}
	return nil, fmt.Errorf("a %T: give a string, number, boolean or list", v)
}

// keysInOrder is m's keys in the order the file gives them.
func keysInOrder(data []byte, m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return lineOf(data, a) - lineOf(data, b) })
	return keys
}

// lineOf is the line where key is set, or its table begins (0 when not
// found as a bare or quoted key at a line's start).
func lineOf(data []byte, key string) int {
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "["+key+"]" {
			return i + 1
		}
		for _, k := range []string{key, `"` + key + `"`, "'" + key + "'"} {
			if rest, ok := strings.CutPrefix(l, k); ok && strings.HasPrefix(strings.TrimSpace(rest), "=") {
				return i + 1
			}
		}
	}
	return 0
}
