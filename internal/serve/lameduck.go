package serve

import "github.com/tcpscope/tcpscope/internal/gate"

// Status says what the server is doing now, for a health check.
func (s *Server) Status() gate.Status { return s.theGate().Status() }

// LameDuck stops the server admitting tests; those running finish as
// planned, their clients get their results. The channel it returns is
// closed once none is running (gate.Gate.LameDuck).
func (s *Server) LameDuck() <-chan struct{} { return s.theGate().LameDuck() }

// Refusals counts what the server refused since it started, by kind
// (gate.Gate.Refusals).
func (s *Server) Refusals() map[string]int64 { return s.theGate().Refusals() }
