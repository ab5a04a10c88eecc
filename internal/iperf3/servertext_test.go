package iperf3_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// A stock client's --get-server-output shows tcpscope server's account
// laid out as stock iperf3's server prints it: the same kinds of line
// (connections, column headers, interval and summary lines per stream,
// sums, separators) in each mode, numbers aside. It once was a layout of
// tcpscope's own, which a script reading iperf3's could not.
func TestServeIperf3ServerOutputText(t *testing.T) {
	client, records := iperf3Clients(t, false)
	modes := [][]string{{"-b", "20M"}, {"-b", "20M", "-R", "-P", "2"}, {"-b", "20M", "--bidir"}, {"-u", "-b", "5M"}, {"-u", "-b", "5M", "-R"}}
	if testing.Short() {
		modes = modes[1:2]
	}
	for _, args := range modes {
		args = append([]string{"-t", "1", "--get-server-output"}, args...)
		doc, err := client(args...)
		<-records
		ours, _ := doc["server_output_text"].(string)
		if err != nil || ours == "" {
			t.Fatalf("iperf3 %v against tcpscope: %v, %q", args, err, ours)
		}
		stock := stockServerText(t, args)
		want, got := lineKinds(stock), lineKinds(ours)
		for k := range want {
			if !got[k] {
				t.Errorf("iperf3 %v: tcpscope's server output has no line like stock's %q\nstock:\n%s\ntcpscope:\n%s", args, k, stock, ours)
			}
		}
		for k := range got {
			if !want[k] && !strings.HasPrefix(k, "diagnosis:") {
				t.Errorf("iperf3 %v: tcpscope's server output has a line %q stock never prints\nstock:\n%s\ntcpscope:\n%s", args, k, stock, ours)
			}
		}
	}
}

// stockServerText runs args against a stock iperf3 server (text, one
// test) and returns its server output.
func stockServerText(t *testing.T, args []string) string {
	t.Helper()
	port := stockServer(t, "-1") // one test, then it exits
	out, err := exec.Command(iperf3Bin(), append([]string{"-c", "127.0.0.1", "-p", fmt.Sprint(port), "-J"}, args...)...).Output()
	var doc map[string]any
	if jerr := json.Unmarshal(out, &doc); err != nil || jerr != nil {
		t.Fatalf("iperf3 %v against iperf3: %v, %v", args, err, jerr)
	}
	text, _ := doc["server_output_text"].(string)
	return text
}

var (
	number = regexp.MustCompile(`\d+(\.\d+)?`)
	prefix = regexp.MustCompile(`[KMGT]?(Bytes|bits/sec)`)
	spaces = regexp.MustCompile(`\s+`)
)

// lineKinds is the set of a report's lines with numbers, unit prefixes,
// addresses and padding made alike. Stock's --bidir output ends with the
// client's streams ("[RX-C]"), a quirk of its own, left out.
func lineKinds(text string) map[string]bool {
	kinds := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" || strings.Contains(l, "-C]") {
			continue
		}
		l = prefix.ReplaceAllString(number.ReplaceAllString(l, "N"), "$1")
		l = strings.ReplaceAll(l, "N.N.N.N", "N")
		kinds[strings.TrimSpace(spaces.ReplaceAllString(l, " "))] = true
	}
	return kinds
}
