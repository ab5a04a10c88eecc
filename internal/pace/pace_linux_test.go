package pace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Ticks come a period apart, and a cancelled context ends a Wait at once.
func TestTicker(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const period = 20 * time.Millisecond
	tk, err := NewTicker(ctx, period)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Stop()
	start := time.Now()
	for range 5 {
		if err := tk.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 5*period-2*time.Millisecond || d > 5*period+time.Second {
		t.Errorf("5 ticks of %v in %v", period, d)
	}
	// Ticks missed while busy come as one. The sleep is the busy time
	// under test, not a wait for something to happen.
	time.Sleep(3 * period)
	start = time.Now()
	if err := tk.Wait(); err != nil || time.Since(start) > period/2 {
		t.Errorf("a tick missed while busy: waited %v, %v", time.Since(start), err)
	}
	if err := tk.Wait(); err != nil || time.Since(start) < period/2 {
		t.Errorf("the tick after: waited %v, %v", time.Since(start), err)
	}
	// Cancelled while Wait waits in the poller.
	long, err := NewTicker(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Stop()
	waited := make(chan error, 1)
	go func() { waited <- long.Wait() }()
	if !waitParked("pace.(*Ticker).Wait") {
		t.Fatal("Wait never waited in the poller")
	}
	start = time.Now()
	cancel()
	select {
	case err := <-waited:
		if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
			t.Errorf("Wait on a cancelled context: %v after %v", err, time.Since(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not end on a cancelled context")
	}
}

// waitParked waits, for up to 10 s, until a goroutine waits in the
// network poller (state "IO wait") inside the function named frame.
func waitParked(frame string) bool {
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "[IO wait") && strings.Contains(g, frame) {
				return true
			}
		}
	}
	return false
}

// Output writes everything given, to a file or /dev/null alike, and
// leaves other writers as they are.
func TestOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := Output(f)
	want := bytes.Repeat([]byte("frame\n"), 100_000)
	for range 3 {
		if n, err := w.Write(want); n != len(want) || err != nil {
			t.Fatalf("wrote %d of %d: %v", n, len(want), err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, bytes.Repeat(want, 3)) {
		t.Errorf("the file holds %d bytes, want %d: %v", len(got), 3*len(want), err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if n, err := Output(null).Write(want); n != len(want) || err != nil {
		t.Errorf("/dev/null: %d, %v", n, err)
	}
	var buf bytes.Buffer
	if Output(&buf) != &buf {
		t.Error("a buffer was wrapped")
	}
}

// A pipe is written through a descriptor of Output's own: everything
// arrives, in order, past a reader that lets the pipe fill (the writer
// waits in the poller), and the pipe's own descriptor stays blocking.
func TestOutputPipe(t *testing.T) {
	// A blocking pipe, as a shell makes (os.Pipe's are non-blocking).
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, pw := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer r.Close()
	defer pw.Close()
	w := Output(pw)
	if w == io.Writer(pw) {
		t.Fatal("a pipe is written as usual")
	}
	var want bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&want, "frame %d %s\n", i, strings.Repeat("x", i%200))
	}
	got := make(chan []byte)
	full := make(chan bool, 1)
	go func() {
		// Nothing is read until the writer finds the pipe full.
		full <- waitParked("pace.(*pollPipe).Write")
		var b bytes.Buffer
		buf := make([]byte, 1000)
		for b.Len() < want.Len() {
			n, err := r.Read(buf)
			if err != nil {
				break
			}
			b.Write(buf[:n])
		}
		got <- b.Bytes()
	}()
	for line := range bytes.Lines(want.Bytes()) {
		if n, err := w.Write(line); n != len(line) || err != nil {
			t.Fatalf("wrote %d of %d: %v", n, len(line), err)
		}
	}
	if b := <-got; !bytes.Equal(b, want.Bytes()) {
		t.Errorf("read %d bytes, want %d", len(b), want.Len())
	}
	if !<-full {
		t.Error("the writer never waited for room in the pipe")
	}
	// A reader gone: the error writing to the pipe itself.
	r.Close()
	if _, err := w.Write([]byte("late\n")); !errors.Is(err, unix.EPIPE) {
		t.Errorf("writing to a pipe without a reader: %v", err)
	}
	rc, err := pw.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	rc.Control(func(fd uintptr) {
		if fl, _ := unix.FcntlInt(fd, unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
			t.Error("the pipe's own descriptor was made non-blocking")
		}
	})
}
