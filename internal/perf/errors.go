package perf

import (
	"errors"
	"fmt"
)

// Code classifies why a test could not run, so the command line can map it
// to an exit code and a hint.
type Code string

// Error codes. The server sends some of them to the client.
const (
	CodeRefused     Code = "refused"        // nothing listens at the address
	CodeUnreachable Code = "unreachable"    // no route, or the name does not resolve
	CodeTimeout     Code = "timeout"        // the peer stopped answering
	CodeVersion     Code = "version"        // protocol versions differ
	CodeBusy        Code = "busy"           // the server is at its concurrency limit
	CodeLimit       Code = "limit"          // the request exceeds a server limit
	CodeDenied      Code = "denied"         // the server's limits do not allow it from this address
	CodeTLS         Code = "tls"            // the server requires TLS, or TLS failed (a certificate not trusted, a pin not matched)
	CodeBadConfig   Code = "bad-config"     // the request is invalid
	CodeProtocol    Code = "protocol"       // the peer broke the protocol
	CodeAborted     Code = "aborted"        // the test broke off mid-way
	CodeShutdown    Code = "shutdown"       // the server is shutting down
	CodeSocket      Code = "socket"         // a socket option could not be applied
	CodeUnverified  Code = "unverified"     // a UDP stream's address did not prove it asked
	CodeAddrInUse   Code = "address-in-use" // the server's address is taken (another server listens there)
)

// Error is a test failure with a class, a message and a hint for the user.
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

// CodeOf returns the Code of err, or "" when err is not a perf.Error.
func CodeOf(err error) Code {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// HintOf returns the hint attached to err, if any.
func HintOf(err error) string {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Hint
	}
	return ""
}

func errorf(code Code, hint string, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Hint: hint}
}
