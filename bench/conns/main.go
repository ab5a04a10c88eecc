// Command conns holds N established loopback TCP connections open for
// the watch benchmark. One process cannot hold both ends of 10,000 under
// the usual 20,000 open-file limit, so it runs twice:
//
//	conns -n N -listen         accepts N connections, prints "port PORT"
//	conns -n N -dial PORT      makes them, prints "ready"
//
// Each then waits until its standard input closes.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
)

func main() {
	n := flag.Int("n", 10000, "connections to hold")
	listen := flag.Bool("listen", false, "accept the connections")
	dial := flag.Int("dial", 0, "make the connections to this loopback port")
	flag.Parse()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	var held []net.Conn
	// Closed by a reset (linger 0), however the process ends: a run must
	// leave no TIME-WAIT sockets behind, or the next one's tcpscope
	// watch lists 20,000 sockets more than its ss -tin, which leaves
	// TIME-WAIT out.
	hold := func(c net.Conn) {
		_ = c.(*net.TCPConn).SetLinger(0)
		held = append(held, c)
	}
	switch {
	case *listen:
		// No keep-alive probes (Go's default every 15 s): 20,000 sockets'
		// probes are 1,300 packets a second of noise, and the replies
		// outrun the kernel's rate limit, so connections held a few
		// minutes die of unanswered probes.
		lc := net.ListenConfig{KeepAlive: -1}
		ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
		fail(err)
		fmt.Println("port", ln.Addr().(*net.TCPAddr).Port)
		for range *n {
			c, err := ln.Accept()
			fail(err)
			hold(c)
		}
	case *dial > 0:
		for range *n {
			c, err := (&net.Dialer{KeepAlive: -1}).Dial("tcp", "127.0.0.1:"+strconv.Itoa(*dial))
			fail(err)
			hold(c)
		}
		fmt.Println("ready")
	default:
		fail(fmt.Errorf("give -listen or -dial PORT"))
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range held {
		c.Close()
	}
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "conns:", err)
		os.Exit(1)
	}
}
