package probe

import (
	"context"
	"net"
	"testing"
)

// Against a real listener on loopback: the facts are consistent (the
// loopback MTU is 65536 and the MSS fits in it), and a refused port is an
// error.
func TestPathLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var d net.Dialer
	f, err := Path(context.Background(), d.DialContext, "tcp", ln.Addr().String(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if f.Connects != 5 || f.RTTMin <= 0 || f.RTTMedian < f.RTTMin || f.PMTU < 1500 || f.MSS <= 0 || f.MSS > f.PMTU-40 {
		t.Errorf("loopback facts %+v", f)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Path(context.Background(), d.DialContext, "tcp", addr, 1); err == nil {
		t.Error("a closed port probed without error")
	}
}
