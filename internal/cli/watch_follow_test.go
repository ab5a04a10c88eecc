package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/sockdiag"
	"github.com/tcpscope/tcpscope/internal/watch"
)

// freePort is a loopback TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitSockets waits until the sockets filter matches satisfy ok, and
// returns them.
func waitSockets(t *testing.T, filter string, ok func([]model.Socket) bool) []model.Socket {
	t.Helper()
	f, err := sockdiag.Parse(filter)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sockdiag.Open(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		socks, err := c.Dump(f, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ok(socks) {
			return socks
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q: the sockets never came: %d now", filter, len(socks))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// iperf3Loopback runs a stock iperf3 test on loopback for secs seconds at
// 100 Mbit/s, and returns its port, data connection and control
// connection (the client's ends) once the data moves. The transfer is
// stopped when the test ends.
func iperf3Loopback(t *testing.T, secs int) (port int, data, control model.Socket) {
	t.Helper()
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("iperf3 is not installed (make setup installs it)")
	}
	port = freePort(t)
	p := strconv.Itoa(port)
	srv := exec.Command("iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", p)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	waitSockets(t, "sport "+p+" state listening", func(s []model.Socket) bool { return len(s) > 0 })
	cli := exec.Command("iperf3", "-c", "127.0.0.1", "-p", p, "-t", strconv.Itoa(secs), "-b", "100M")
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Process.Kill(); cli.Wait() })
	// The client's two ends: the control connection, then the data
	// connection, which has moved a megabyte once the transfer is on.
	socks := waitSockets(t, "dport "+p+" state established", func(s []model.Socket) bool {
		return len(s) == 2 && max(s[0].TCP.BytesAcked.V, s[1].TCP.BytesAcked.V) >= model.MiB
	})
	if socks[0].TCP.BytesAcked.V < socks[1].TCP.BytesAcked.V {
		socks[0], socks[1] = socks[1], socks[0]
	}
	return port, socks[0], socks[1]
}

// frames decodes --json-stream output.
func frames(t *testing.T, out string) []watch.Frame {
	t.Helper()
	var fs []watch.Frame
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var f watch.Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("frame %d: %v", len(fs), err)
		}
		fs = append(fs, f)
	}
	return fs
}

// Once the followed connection has two samples, every frame of a steady
// transfer carries the running diagnosis. It used to be only on the
// frames where it was recomputed, twice a second: one in five at -i
// 100ms, and at -i 500ms every other, for the jitter of the ticks.
func TestWatchDiagnosisOnEveryFrame(t *testing.T) {
	port, data, _ := iperf3Loopback(t, 60)
	exact := fmt.Sprintf("sport %d dport %d", data.Local.Port(), port)
	for _, c := range []struct{ interval, count string }{{"100ms", "15"}, {"500ms", "6"}} {
		code, out, errOut := run("watch", "--conn", exact, "--json-stream", "-i", c.interval, "-c", c.count)
		if code != 0 {
			t.Fatalf("watch --conn %q: exit %d: %s", exact, code, errOut)
		}
		var got strings.Builder
		for _, f := range frames(t, out) {
			if len(f.Diagnosis) > 0 {
				got.WriteByte('D')
			} else {
				got.WriteByte('.')
			}
		}
		if want := "." + strings.Repeat("D", got.Len()-1); got.String() != want {
			t.Errorf("-i %s: frames with a diagnosis %s, want %s", c.interval, got.String(), want)
		}
	}
}
