package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// The seeds' worked examples, through the command a user types.
func TestCalcSeedExamples(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		// Networkers 2004: a 17,520-byte window over 40 ms.
		{[]string{"calc", "window", "--window", "17520", "--rtt", "40ms"}, "at most 3.50 Mbit/s"},
		// 80 ms × 100 Mbit/s = 1 MB.
		{[]string{"calc", "bdp", "--rate", "100M", "--rtt", "80ms"}, "= 1.00 MB"},
		// Tierney: 100 Mbit/s at 150 ms needs 1.9 MB.
		{[]string{"calc", "bdp", "--rate", "100M", "--rtt", "150ms"}, "= 1.88 MB"},
		// Web100 paper, eq. 2: OC-12 at 20 ms, 66% of 622 Mbit/s, p ≈ 0.0002%.
		{[]string{"calc", "loss", "--target", "410.5M", "--rtt", "20ms", "--c", "1"}, "below 0.000202%"},
		// GigaSunet: 1 Gbit/s in 1500-byte packets ≈ 83,000 packets/s.
		{[]string{"calc", "pps", "--rate", "1G"}, "83,333 packets/s"},
		{[]string{"calc", "fiber", "--km", "4000"}, "at least 44.444ms"},
		{[]string{"calc", "transfer", "--bytes", "1TB", "--rate", "1G"}, "2h13m20s"},
		{[]string{"calc", "mathis", "--rtt", "20ms", "--loss", "0.0001"}, "= 71.5 Mbit/s"},
		{[]string{"calc", "ber", "--ber", "1e-10", "--rtt", "20ms"}, "at MTU 9000: 1.64 Gbit/s"},
	} {
		code, out, errOut := run(tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, output %q (stderr %q), want %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

func TestCalcJSONAndErrors(t *testing.T) {
	code, out, _ := run("calc", "bdp", "--rate", "1G", "--rtt", "21ms", "--json")
	var res struct {
		Results map[string]float64 `json:"results"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Results["bdp_bytes"] != 2_625_000 {
		t.Errorf("calc bdp --json: exit %d, %s", code, out)
	}
	for _, args := range [][]string{
		{"calc", "mathis", "--rtt", "20ms"},
		{"calc", "mathis", "--rtt", "20ms", "--loss", "2"},
		{"calc", "bdp", "--rate", "fast", "--rtt", "1ms"},
		{"calc", "window", "--window", "0", "--rtt", "1ms"},
		{"calc", "bdp", "extra", "--rate", "1G", "--rtt", "1ms"},
	} {
		code, _, errOut := run(args...)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "tcpscope:") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, code, errOut)
		}
	}
}

// calc never wraps: a rate beyond any link, or a BDP beyond any buffer, is
// refused with one line (it printed "-9223372 TB" and tcp_rmem="… 0"), and
// a buffer larger than Linux gives one socket is said to be so, not
// offered as a sysctl the kernel refuses.
func TestCalcOutOfRange(t *testing.T) {
	for _, args := range [][]string{
		{"calc", "bdp", "--rate", "1e99", "--rtt", "20ms"},
		{"calc", "bdp", "--rate", "1000T", "--rtt", "24h"},
	} {
		code, out, errOut := run(args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "try:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, one line with a hint", args, code, out, errOut)
		}
	}
	code, out, _ := run("calc", "bdp", "--rate", "100G", "--rtt", "300ms")
	if code != 0 || strings.Contains(out, "sysctl -w") || !strings.Contains(out, "more than Linux gives one socket") || strings.Contains(out, "= -") {
		t.Errorf("calc bdp of 3.75 GB: exit %d, %q", code, out)
	}
}
