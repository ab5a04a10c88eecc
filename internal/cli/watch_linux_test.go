package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/lab/emulator"
	"github.com/tcpscope/tcpscope/internal/lab/labtest"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/watch"
)

// pySender is a plain Python program that sends to HOST:PORT for SECS.
const pySender = `
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
end = time.time() + float(sys.argv[3])
buf = b"x" * 65536
while time.time() < end:
    s.sendall(buf)
s.close()
`

// pyReceiver accepts one connection on PORT and reads it to the end.
const pyReceiver = `
import socket, sys
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2]))); l.listen(1)
c, _ = l.accept()
while c.recv(1 << 20):
    pass
`

// TestWatchNamesTheLimit is issue 6's proof: transfers started by plain
// processes (stock iperf3, a Python sender) across lab paths, watched from
// outside with `tcpscope watch --conn ... --json-stream`: a small receiver
// buffer is named rwnd-limited, random loss on a long path loss-limited,
// within a few seconds.
func TestWatchNamesTheLimit(t *testing.T) {
	labtest.Require(t)
	for _, tool := range []string{"iperf3", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (make setup installs iperf3)", tool)
		}
	}
	small := lab.HostConfig{Rmem: lab.BufferSizes{Min: 4096, Default: 65536, Max: 128 * model.KiB}}
	cases := []struct {
		name   string
		path   emulator.Impairment
		a, b   lab.HostConfig
		sender string
		want   string
	}{
		{"iperf3, small receiver buffer", emulator.Impairment{Delay: 10 * time.Millisecond, Rate: 100e6}, lab.HostConfig{}, small, "iperf3", "rwnd-limited"},
		{"python, small receiver buffer", emulator.Impairment{Delay: 10 * time.Millisecond, Rate: 100e6}, lab.HostConfig{}, small, "python3", "rwnd-limited"},
		{"iperf3, random loss on a long path", emulator.Impairment{Delay: 30 * time.Millisecond, Rate: 100e6, Loss: 0.003},
			lab.HostConfig{CongestionControl: "reno"}, lab.HostConfig{}, "iperf3", "loss-limited"},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			back := emulator.Impairment{Delay: tc.path.Delay}
			p := labtest.Pair(t, lab.PairConfig{Emulated: &emulator.Config{AtoB: tc.path, BtoA: back}, A: tc.a, B: tc.b, Backend: lab.UseEmulator})
			ctx := t.Context()
			const port = "5201"
			b := p.B.Addr.String()
			var srv, cli *exec.Cmd
			if tc.sender == "iperf3" {
				srv = p.B.Command(ctx, "iperf3", "-s", "-1", "-B", b, "-p", port)
				cli = p.A.Command(ctx, "iperf3", "-c", b, "-p", port, "-t", "8")
			} else {
				srv = p.B.Command(ctx, "python3", "-c", pyReceiver, b, port)
				cli = p.A.Command(ctx, "python3", "-c", pySender, b, port, "8")
			}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
			waitListening(t, p, port)
			if err := cli.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cli.Process.Kill(); cli.Wait() })
			// The limit shows once the transfer is past its start: wait
			// until the sender has been busy a second by the kernel's
			// count (iperf3's control connection never is).
			err := p.A.Do(func() error {
				_, err := awaitSockets("dport "+port+" state established", 10*time.Second, func(s []model.Socket) bool {
					return slices.ContainsFunc(s, func(k model.Socket) bool { return k.TCP.BusyTime.V >= time.Second })
				})
				return err
			})
			if err != nil {
				t.Fatalf("the transfer did not start: %v", err)
			}

			// Step 1: list the connections to the port, as a user would,
			// and take the busiest (iperf3 has a control connection too).
			var out string
			var code int
			p.A.Do(func() error {
				code, out, _ = run("watch", "--json-stream", "-c", "4", "-i", "250ms", "dport", port)
				return nil
			})
			if code != 0 {
				t.Fatalf("watch list: exit %d", code)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var fr watch.Frame
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &fr); err != nil || len(fr.Rows) == 0 {
				t.Fatalf("watch list output: %v\n%s", err, out)
			}
			busiest := fr.Rows[0]
			if !busiest.Sending || busiest.Rate <= 0 || busiest.Process == "" {
				t.Errorf("busiest connection %+v", busiest)
			}
			// The same from the machine's own namespace, with --netns.
			code, out, errOut := run("watch", "--netns", p.A.Name, "--json-stream", "-c", "2", "dport", port)
			if code != 0 || !strings.Contains(out, fmt.Sprintf(`"local":"%s"`, busiest.Local)) {
				t.Errorf("watch --netns %s: exit %d, %s\n%.300s", p.A.Name, code, errOut, out)
			}

			// Step 2: follow it for 4 s; the running diagnosis must name the
			// limit by the end.
			rec := filepath.Join(t.TempDir(), "rec.jsonl")
			filter := fmt.Sprintf("sport %d dport %s", busiest.Local.Port(), port)
			p.A.Do(func() error {
				code, out, _ = run("watch", "--conn", filter, "--json-stream", "-i", "200ms", "-c", "20", "--record", rec)
				return nil
			})
			if code != 0 {
				t.Fatalf("watch --conn: exit %d\n%s", code, out)
			}
			var last watch.Frame
			sc := bufio.NewScanner(strings.NewReader(out))
			sc.Buffer(nil, 1<<24)
			n := 0
			for sc.Scan() {
				var f watch.Frame
				if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
					t.Fatal(err)
				}
				if len(f.Diagnosis) > 0 {
					last = f
				}
				n++
			}
			if len(last.Diagnosis) == 0 {
				t.Fatalf("%d frames, none with a diagnosis", n)
			}
			got := last.Diagnosis[0]
			t.Logf("%s: after %v, %s: %s", tc.name, last.At.Round(time.Millisecond), got.ID, got.Summary)
			if got.ID != tc.want {
				for _, e := range got.Evidence {
					t.Logf("  %s: %s", e.What, e.Value)
				}
				t.Errorf("%s: diagnosis %s, want %s", tc.name, got.ID, tc.want)
			}
			// The recording replays to the same diagnosis.
			code, out, _ = run("replay", rec, "--json-stream")
			if code != 0 || !strings.Contains(out, `"id":"`+tc.want+`"`) {
				t.Errorf("replay: exit %d, %d bytes, want %s in it", code, len(out), tc.want)
			}
		})
	}
}

// waitListening waits until host B listens on port, asking sock_diag in
// B rather than connecting (the receivers take one connection only).
func waitListening(t *testing.T, p *lab.Pair, port string) {
	t.Helper()
	err := p.B.Do(func() error {
		_, err := awaitSockets("sport "+port+" state listening", 5*time.Second, func(s []model.Socket) bool { return len(s) > 0 })
		return err
	})
	if err != nil {
		t.Fatalf("nothing listens on port %s in host B: %v", port, err)
	}
}

// A filter that does not parse is one line with its column and a hint,
// exit 2 (usage).
func TestWatchFilterErrors(t *testing.T) {
	for q, want := range map[string]string{
		"( dport 22 or sport 22": "column 23: the ( at column 1 is never closed",
		"dport 22 or":            `column 12: a condition must follow "or"`,
		"dport 22 )":             `column 10: ")" closes nothing`,
	} {
		code, _, stderr := run("watch", q)
		if code != ExitUsage || !strings.Contains(stderr, want) || !strings.Contains(stderr, "try:") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("watch %q: exit %d, %q", q, code, stderr)
		}
	}
}
