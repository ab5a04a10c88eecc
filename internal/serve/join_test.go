package serve

import (
	"net"
	"testing"
)

// A data connection that names a stream of a test that has all its
// streams is not taken (the protocol closes it), rather than parked;
// before the test is sealed, the same connection is.
func TestJoinStreamAfterSeal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dial := func() *Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return &Conn{TCPConn: c.(*net.TCPConn), admitted: func() {}}
	}
	srv := &Server{running: map[string]*serverTest{}, byKey: map[string]streamRef{}}
	key := []byte("0123456789abcdef")
	st := &serverTest{cookie: []byte("test"), nconn: 2, data: make(chan dataConn, 2), keys: [][]byte{key, []byte("fedcba9876543210")}}
	srv.running[string(st.cookie)] = st
	for i, k := range st.keys {
		srv.byKey[string(k)] = streamRef{st, i}
	}
	if !srv.JoinStream(key, 0, dial()) {
		t.Fatal("stream 0 of a test waiting for it was not taken")
	}
	if srv.JoinStream(key, 1, dial()) {
		t.Fatal("a connection naming stream 1 with stream 0's key was taken")
	}
	if d := <-st.data; d.stream != 0 {
		t.Fatalf("the connection taken came as stream %d, want 0", d.stream)
	}
	// As awaitStreams seals a test once it has its streams (here the
	// test gave up waiting for stream 1).
	srv.seal(st)
	if srv.JoinStream(st.keys[1], 1, dial()) {
		t.Fatal("a data connection after the test was sealed was taken")
	}
	if got := len(st.data); got != 0 {
		t.Fatalf("%d connections queued after the seal", got)
	}
}
