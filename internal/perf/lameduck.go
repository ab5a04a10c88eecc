package perf

// Status is what a server is doing, for a health check.
type Status struct {
	// Draining: the server is in lame-duck mode, admitting no new test
	// and ending once the running ones have.
	Draining bool
	Running  int // tests running, those still opening their streams included
	Streams  int // their streams
}

// Status says what the server is doing now.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Draining: s.draining, Running: len(s.running)}
	for _, t := range s.running {
		st.Streams += t.nconn
	}
	return st
}

// LameDuck stops the server admitting tests; those running finish as
// planned, their clients get their results. The channel it returns is
// closed once none is running: an operator (or cli) then stops the
// server, which a load balancer stopped sending clients to as soon as
// the health check said "draining". Calling it again returns the same
// channel.
func (s *Server) LameDuck() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	if !s.draining {
		s.draining = true
		if s.Logger != nil {
			s.Logger.Info("lame duck: admitting no new tests", "running", len(s.running))
		}
	}
	s.closeIfIdleLocked()
	return s.idle
}

// closeIfIdleLocked closes idle once a draining server runs no test.
// Called with s.mu held.
func (s *Server) closeIfIdleLocked() {
	if !s.draining || len(s.running) > 0 {
		return
	}
	select {
	case <-s.idle:
	default:
		close(s.idle)
	}
}
