package engine

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
)

// rawReader with trunc counts every byte that arrives and copies none: the buffer
// it reads into stays zero while a pattern goes by, then end of file.
func TestTruncReaderDiscards(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const n = 4 << 20
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write(bytes.Repeat([]byte{0x5a}, n))
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read, err := rawReader(c.(*net.TCPConn), true)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256<<10)
	var got int
	for {
		m, err := read(buf)
		got += m
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %d B: %v", got, err)
		}
	}
	if got != n {
		t.Errorf("counted %d B, sent %d", got, n)
	}
	if i := bytes.IndexByte(buf, 0x5a); i >= 0 {
		t.Errorf("byte %d of the buffer was written: the bytes were copied", i)
	}
}
