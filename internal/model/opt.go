package model

import (
	"encoding/json"
	"fmt"
)

// Opt is a value a kernel may not provide. A field the running kernel's
// struct tcp_info is too short to hold is absent, not zero: JSON output omits
// it (with the omitzero tag) and analysis must check OK before using V.
type Opt[T any] struct {
	V  T
	OK bool
}

// Some returns a present value.
func Some[T any](v T) Opt[T] { return Opt[T]{V: v, OK: true} }

// IsZero reports absence; encoding/json's omitzero uses it.
func (o Opt[T]) IsZero() bool { return !o.OK }

// Get returns the value and whether it is present.
func (o Opt[T]) Get() (T, bool) { return o.V, o.OK }

// MarshalJSON writes the bare value; absent values are written as null
// (with omitzero they are not written at all).
func (o Opt[T]) MarshalJSON() ([]byte, error) {
	if !o.OK {
		return []byte("null"), nil
	}
	return json.Marshal(o.V)
}

// UnmarshalJSON reads a bare value; null leaves the value absent.
func (o *Opt[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = Opt[T]{}
		return nil
	}
	if err := json.Unmarshal(b, &o.V); err != nil {
		return err
	}
	o.OK = true
	return nil
}

// String prints the value, or "not measured" when absent: an absent
// figure printed through fmt never reads as a zero.
func (o Opt[T]) String() string {
	if !o.OK {
		return "not measured"
	}
	return fmt.Sprint(o.V)
}
