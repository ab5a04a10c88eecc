package model

import "testing"

// The named states are the kernel's numbers: sock_diag reports them so,
// and the names they print are ss's.
func TestTCPStateNumbers(t *testing.T) {
	for _, c := range []struct {
		s    TCPState
		n    uint8
		name string
	}{
		{TCPEstablished, 1, "established"}, {TCPSynSent, 2, "syn-sent"}, {TCPTimeWait, 6, "time-wait"},
		{TCPClose, 7, "close"}, {TCPCloseWait, 8, "close-wait"}, {TCPListen, 10, "listen"},
		{TCPNewSynRecv, 12, "new-syn-recv"}, {TCPBoundInactive, 13, "bound-inactive"},
	} {
		if uint8(c.s) != c.n || c.s.String() != c.name {
			t.Errorf("%s is %d, want %d (%s)", c.s, uint8(c.s), c.n, c.name)
		}
	}
}
