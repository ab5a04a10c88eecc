// Package perftest holds test helpers shared by the engine's tests and
// those of the protocols on it (internal/perf, internal/iperf3): a forged
// UDP sender and a victim that counts what reaches it, for the server's
// reflection tests, a server on loopback for a test's life, a wait for a
// stock program's listener, and a TestMain for packages whose parallel tests wait
// on the clock. It imports nothing of the engine, so perf's own in-package
// tests may use it.
package perftest

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SpoofUDP sends payload in a UDP datagram from src to dst through a raw
// socket, as an attacker forging its source address would. It skips t
// unless the process may open raw sockets (root).
func SpoofUDP(t *testing.T, src, dst *net.UDPAddr, payload []byte) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		t.Skipf("forging a source address needs a raw socket (root): %v", err)
	}
	defer syscall.Close(fd)
	udpLen := 8 + len(payload)
	pkt := make([]byte, 20+udpLen)
	pkt[0] = 0x45 // IPv4, a 20-byte header
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	pkt[8] = 64 // TTL
	pkt[9] = syscall.IPPROTO_UDP
	copy(pkt[12:16], src.IP.To4())
	copy(pkt[16:20], dst.IP.To4())
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(pkt[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(pkt[10:], ^uint16(sum))
	binary.BigEndian.PutUint16(pkt[20:], uint16(src.Port))
	binary.BigEndian.PutUint16(pkt[22:], uint16(dst.Port))
	binary.BigEndian.PutUint16(pkt[24:], uint16(udpLen)) // checksum 0: none
	copy(pkt[28:], payload)
	to := &syscall.SockaddrInet4{}
	copy(to.Addr[:], dst.IP.To4())
	if err := syscall.Sendto(fd, pkt, 0, to); err != nil {
		t.Fatalf("send a forged datagram: %v", err)
	}
}

// Victim is a UDP socket at an address that never asked for anything (a
// loopback address such as 127.0.0.2); received counts the datagrams and
// bytes that reached it so far. It closes when the test ends.
func Victim(t *testing.T, ip string) (addr *net.UDPAddr, received func() (datagrams, bytes int)) {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var n, b int
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			k, err := c.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			n, b = n+1, b+k
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return c.LocalAddr().(*net.UDPAddr), func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return n, b
	}
}

// RunClockBound runs a package's tests (from its TestMain) with up to 8
// parallel tests at once, unless -parallel says otherwise, and returns the
// exit code. For packages whose tests that call t.Parallel are paced or
// wait on a timer (a few Mbit/s, a limit to expire): they wait on the
// clock, not the CPU, so go test's default of one per CPU only makes the
// tier slower. Full-speed tests never call t.Parallel; they run alone,
// before the parallel ones.
func RunClockBound(m *testing.M) int {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "8")
	}
	return m.Run()
}

// Server is what Serve runs: a serve.Server, named by its method so that
// perf's own in-package tests can use this package.
type Server interface {
	Serve(ctx context.Context, ln net.Listener) error
}

// Serve runs srv on a free loopback port until the test ends, and fails
// the test if it returns an error then. It returns the address.
func Serve(t *testing.T, srv Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// WaitListening waits until something listens on the loopback TCP port,
// reading /proc/net/tcp (a probe connection would count as a client of a
// stock iperf3 -s -1).
func WaitListening(t *testing.T, port int) {
	t.Helper()
	want := fmt.Sprintf("0100007F:%04X 00000000:0000 0A", port)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile("/proc/net/tcp")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 3 && strings.Join(f[1:4], " ") == want {
				return
			}
		}
	}
	t.Fatalf("nothing listens on 127.0.0.1:%d", port)
}
