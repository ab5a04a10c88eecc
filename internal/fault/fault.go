// Package fault is the project's error taxonomy: why a test could not
// run or broke off, as a Code a front end maps to its own terms (an exit
// code and a flag to try for the command line, a status and a field for
// an HTTP API), with a message and a hint for the user. Codes cross the
// wire: the native protocol's server sends some of them to its client.
package fault

import (
	"errors"
	"fmt"
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

// HintOf is the hint attached to err, if any.
func HintOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}
