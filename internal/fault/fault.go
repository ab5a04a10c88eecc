// Package fault is the project's error taxonomy: why a test could not
// run or broke off, as a Code a front end maps to its own terms (an exit
// code and a flag to try for the command line, a status and a field for
// an HTTP API), with a message and a hint for the user. Codes cross the
// wire: the native protocol's server sends some of them to its client.
package fault

import (
	"errors"
	"fmt"
	"strings"
)

// Code classifies why a test could not run.
type Code string

// The codes. Their strings are the native protocol's (docs/PROTOCOL.md).
const (
	Refused     Code = "refused"        // nothing listens at the address
	Unreachable Code = "unreachable"    // no route, or the name does not resolve
	Timeout     Code = "timeout"        // the peer stopped answering
	Version     Code = "version"        // protocol versions differ
	Busy        Code = "busy"           // the server is at its concurrency limit
	Limit       Code = "limit"          // the request exceeds a server limit
	Denied      Code = "denied"         // the server's limits do not allow it from this address
	TLS         Code = "tls"            // the server requires TLS, or TLS failed (a certificate not trusted, a pin not matched)
	BadConfig   Code = "bad-config"     // the request is invalid
	Protocol    Code = "protocol"       // the peer broke the protocol
	Aborted     Code = "aborted"        // the test broke off mid-way
	Shutdown    Code = "shutdown"       // the server is shutting down
	Socket      Code = "socket"         // a socket option could not be applied
	Unverified  Code = "unverified"     // a UDP stream's address did not prove it asked
	AddrInUse   Code = "address-in-use" // the server's address is taken (another server listens there)
)

// Error is a failure with a code, a message and a hint for the user.
// A hint names what the user may change by its field, in braces: a
// test's settings by model.TestConfig's JSON keys ("use {parallel}
// between 1 and 128"), a client's own as {token} (its access token),
// {tls} (TLS, by a CA or a pin), {tls_pin}, {bind} and
// {connect_timeout}. Each front end phrases the names its own way
// (Phrase): a flag for the terminal, a JSON key for an API. The native
// protocol sends hints as written, so that its client phrases a
// server's too.
type Error struct {
	Code Code
	Msg  string
	Hint string
	Err  error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf is an Error of code with a hint and a formatted message.
func Errorf(code Code, hint string, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// CodeOf is the Code of err, or "" when err is no Error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Phrase is hint with each field named in braces replaced by name's
// name for it; a front end that has no name for a field (name returns
// "") shows the field's own, in backquotes.
func Phrase(hint string, name func(field string) string) string {
	if !strings.Contains(hint, "{") {
		return hint
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(hint, '{')
		j := strings.IndexByte(hint[i+1:], '}')
		if i < 0 || j < 0 {
			b.WriteString(hint)
			return b.String()
		}
		field := hint[i+1 : i+1+j]
		b.WriteString(hint[:i])
		if n := name(field); n != "" {
			b.WriteString(n)
		} else {
			b.WriteString("`" + field + "`")
		}
		hint = hint[i+2+j:]
	}
}

// HintOf is the hint attached to err, if any, as written (see Error).
func HintOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}
