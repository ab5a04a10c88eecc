package diagnose

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Each UDP rule names its cause from the datagram accounts alone.
func TestDatagramFindings(t *testing.T) {
	mbit := model.MbitPerSecond
	for _, tc := range []struct {
		name        string
		sent, got   model.Bitrate
		asked       model.Bitrate
		u           model.Datagrams
		primary     string
		alsoPresent string
	}{
		{"receiver buffer", 900 * mbit, 800 * mbit, 900 * mbit, model.Datagrams{Packets: 100000, Lost: 11000, SocketDrops: model.Some[int64](10990)}, "udp-rcvbuf-overflow", ""},
		{"random path loss", 20 * mbit, 19.6 * mbit, 20 * mbit, model.Datagrams{Packets: 5000, Lost: 100, SocketDrops: model.Some[int64](0)}, "udp-path-loss", ""},
		{"over capacity", 200 * mbit, 100 * mbit, 200 * mbit, model.Datagrams{Packets: 50000, Lost: 25000, SocketDrops: model.Some[int64](0)}, "udp-over-capacity", ""},
		{"clean, jittery", 10 * mbit, 10 * mbit, 10 * mbit, model.Datagrams{Packets: 900, Jitter: 40e6, OutOfOrder: 3}, "udp-clean", "udp-jitter"},
		{"slow sender", 400 * mbit, 400 * mbit, 1000 * mbit, model.Datagrams{Packets: 90000}, "udp-sender-limited", ""},
	} {
		s := &model.DirectionSummary{Direction: model.ClientToServer, Streams: 1, Goodput: model.Some(tc.got), SenderRate: model.Some(tc.sent), UDP: &tc.u}
		fs := datagramFindings(s, tc.asked, 0, Options{})
		sortFindings(fs)
		if len(fs) == 0 || fs[0].ID != tc.primary || !fs[0].Primary {
			t.Errorf("%s: findings %v, want %s first", tc.name, ids(fs), tc.primary)
			continue
		}
		if tc.alsoPresent != "" && !hasID(fs, tc.alsoPresent) {
			t.Errorf("%s: findings %v lack %s", tc.name, ids(fs), tc.alsoPresent)
		}
		for _, f := range fs[1:] {
			if f.Primary {
				t.Errorf("%s: two primary findings: %v", tc.name, ids(fs))
			}
		}
	}
}

func hasID(fs []model.Finding, id string) bool {
	for _, f := range fs {
		if f.ID == id {
			return true
		}
	}
	return false
}

// The receive-buffer finding's share is of the datagrams lost: never over
// all of them, never rounded up to all when some were the path's, and a
// socket count past the loss (datagrams that carried no test data) is
// shown as such in the evidence.
func TestRcvbufOverflowShare(t *testing.T) {
	mbit := model.MbitPerSecond
	for _, tc := range []struct {
		lost, drops   int64
		share, beyond string // in the summary; the evidence's value, "" none
	}{
		{319756, 319833, "all 319756 lost", "77"},
		{319756, 319756, "all 319756 lost", ""},
		{11000, 10990, "99.9% of the 11000 lost", ""},
		{11000, 6000, "54.5% of the 11000 lost", ""},
	} {
		u := model.Datagrams{Packets: 1000000, Lost: tc.lost, SocketDrops: model.Some(tc.drops)}
		s := &model.DirectionSummary{Direction: model.ClientToServer, Streams: 1, Goodput: model.Some(900 * mbit), SenderRate: model.Some(1000 * mbit), UDP: &u}
		f := newUDPDirection(s, 1000*mbit, 0, Options{}).rcvbufOverflow()
		if f == nil {
			t.Errorf("lost %d, drops %d: no udp-rcvbuf-overflow", tc.lost, tc.drops)
			continue
		}
		if !strings.Contains(f.Summary, fmt.Sprintf("dropped %d datagrams, %s,", tc.drops, tc.share)) {
			t.Errorf("lost %d, drops %d: summary %q, want the share %q", tc.lost, tc.drops, f.Summary, tc.share)
		}
		beyond := ""
		for _, e := range f.Evidence {
			if strings.HasPrefix(e.What, "dropped beyond the datagrams lost") {
				beyond = e.Value
			}
		}
		if beyond != tc.beyond {
			t.Errorf("lost %d, drops %d: evidence of drops beyond the loss %q, want %q", tc.lost, tc.drops, beyond, tc.beyond)
		}
	}
}
