package inetdiag

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpscope/tcpscope/internal/golden"

	"github.com/tcpscope/tcpscope/internal/model"
)

// recordings are the kernel's replies in testdata, recorded by package
// sockdiag's TestRecord (see the comments at the top of each file).
var recordings = []string{"dump-v4", "dump-v6", "list-v4", "lookup", "lookup-enoent", "truncated", "garbage"}

// readBatches reads a recording: hex digits, 16 bytes a line after an
// "offset:" prefix, '#' starting a comment, and a "# batch" comment line
// starting each batch, as one read of the netlink socket returned it.
func readBatches(t testing.TB, name string) [][]byte {
	t.Helper()
	path := filepath.Join("testdata", name+".hex")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var batches [][]byte
	var digits strings.Builder
	flush := func() {
		if digits.Len() == 0 {
			return
		}
		b, err := hex.DecodeString(digits.String())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		batches = append(batches, b)
		digits.Reset()
	}
	for line := range strings.Lines(string(text)) {
		if strings.HasPrefix(line, "# batch ") {
			flush()
		}
		line, _, _ = strings.Cut(line, "#")
		if _, rest, ok := strings.Cut(line, ":"); ok {
			line = rest
		}
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	flush()
	if len(batches) == 0 {
		t.Fatalf("%s: no batch", path)
	}
	return batches
}

// replay is what the codec makes of a recording, fed batch by batch as
// package sockdiag feeds it what it reads: the golden files hold it.
type replay struct {
	// Batches is how many batches the reply took to complete (or all of
	// them, when it did not).
	Batches int  `json:"batches"`
	Done    bool `json:"done"`
	// Multi counts the sockets marked NLM_F_MULTI (one of a dump's).
	Multi   int                 `json:"multi"`
	Sockets []model.Socket      `json:"sockets,omitempty"`
	Briefs  []model.SocketBrief `json:"briefs,omitempty"`
	Error   string              `json:"error,omitempty"`
	err     error
}

// replayBatches decodes batches as package sockdiag does, into sockets,
// or with brief, into briefs. Every payload is also decoded the other
// way, and the two must agree.
func replayBatches(t *testing.T, batches [][]byte, brief bool) replay {
	t.Helper()
	h, _, _, err := Next(batches[0])
	if err != nil {
		return replay{Batches: 1, Error: err.Error(), err: err}
	}
	var r replay
	var d, other Decoder
	for _, b := range batches {
		r.Batches++
		// The flags of each socket, walked beside Batch.
		for rest := b; len(rest) > 0; {
			mh, _, next, err := Next(rest)
			if err != nil {
				break
			}
			if mh.Type == SockDiagByFamily && mh.Flags&FlagMulti != 0 {
				r.Multi++
			}
			rest = next
		}
		done, err := Batch(b, h.Seq, func(p []byte) error {
			var s model.Socket
			var sb model.SocketBrief
			var err, oerr error
			if brief {
				err, oerr = d.Brief(p, &sb), other.Socket(p, &s)
			} else {
				err, oerr = d.Socket(p, &s), other.Brief(p, &sb)
			}
			if (err == nil) != (oerr == nil) {
				t.Errorf("Socket and Brief disagree on a payload: %v, %v", err, oerr)
			}
			if err == nil && oerr == nil && !equalBrief(s.Brief(), sb) {
				t.Errorf("Brief read %+v, Socket %+v", sb, s.Brief())
			}
			if brief {
				r.Briefs = append(r.Briefs, sb)
			} else {
				r.Sockets = append(r.Sockets, s)
			}
			return err
		})
		if err != nil {
			r.Done, r.Error, r.err = done, err.Error(), err
			break
		}
		if done {
			r.Done = true
			break
		}
	}
	if !r.Done && r.err == nil {
		r.Error, r.err = ErrIncomplete.Error(), ErrIncomplete
	}
	if r.Batches < len(batches) {
		t.Errorf("the reply ended in batch %d of %d", r.Batches, len(batches))
	}
	return r
}

// equalBrief compares briefs, their tcp_info samples by value.
func equalBrief(a, b model.SocketBrief) bool {
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return bytes.Equal(aj, bj)
}

// littleEndian: the recordings come from a little-endian machine, and
// netlink is in the host's byte order.
func littleEndian(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the recordings are little-endian; this host is not")
	}
}

// The recorded replies decode to the golden files, batch by batch as read
// and, through Decode, all at once.
func TestGolden(t *testing.T) {
	littleEndian(t)
	for _, name := range recordings {
		t.Run(name, func(t *testing.T) {
			batches := readBatches(t, name)
			r := replayBatches(t, batches, strings.HasPrefix(name, "list-"))
			checkGolden(t, filepath.Join("testdata", name+".golden"), r)
			socks, err := Decode(bytes.Join(batches, nil))
			if (err != nil) != (r.err != nil) || err != nil && err.Error() != r.err.Error() {
				t.Errorf("Decode: %v; batch by batch: %v", err, r.err)
			}
			if err == nil && len(r.Sockets) > 0 {
				if got, _ := json.Marshal(socks); !bytes.Equal(got, mustJSON(t, r.Sockets)) {
					t.Errorf("Decode read other sockets than the batches did")
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// What each recording holds, checked apart from the goldens, so that a
// golden rewritten by -update cannot hide a wrong decoding.
func TestRecordings(t *testing.T) {
	littleEndian(t)
	v4 := replayBatches(t, readBatches(t, "dump-v4"), false)
	if v4.Batches < 3 || !v4.Done || v4.err != nil || len(v4.Sockets) != 13 || v4.Multi != 13 {
		t.Fatalf("dump-v4: %d batches, done %v, %d sockets (%d multi), %v; want 13 sockets in a multi-part dump",
			v4.Batches, v4.Done, len(v4.Sockets), v4.Multi, v4.err)
	}
	var listen netip.AddrPort
	byEnds := map[[2]netip.AddrPort]model.Socket{}
	bbr := 0
	for _, s := range v4.Sockets {
		if s.IPv6 || s.Local.Addr() != netip.MustParseAddr("127.45.67.89") || s.Cookie == 0 || s.Inode == 0 {
			t.Errorf("dump-v4: socket %+v", s)
		}
		if s.TCP.State == 10 {
			listen = s.Local
		}
		// BBR's model comes with BBR, and only with it (a listener has
		// none).
		if s.TCP.Congestion == "bbr" {
			bbr++
		}
		if s.TCP.BBR != nil && s.TCP.Congestion != "bbr" || s.TCP.BBR == nil && s.TCP.Congestion == "bbr" && s.TCP.State != 10 {
			t.Errorf("dump-v4: %s → %s: congestion control %q, BBR model %+v", s.Local, s.Remote, s.TCP.Congestion, s.TCP.BBR)
		}
		if s.TCP.KernelLen < 104 || !s.TCP.SndBuf.OK || !s.TCP.RecvQ.OK {
			t.Errorf("dump-v4: %s → %s: tcp_info of %d bytes, send buffer %v, RecvQ %v", s.Local, s.Remote, s.TCP.KernelLen, s.TCP.SndBuf, s.TCP.RecvQ)
		}
		byEnds[[2]netip.AddrPort{s.Local, s.Remote}] = s
	}
	// The first client's congestion control is not the others'.
	if !listen.IsValid() || bbr != 1 && bbr != len(v4.Sockets)-1 {
		t.Errorf("dump-v4: listener %v, %d BBR sockets of %d; want a listener, and one socket unlike the rest", listen, bbr, len(v4.Sockets))
	}
	// Each client's bytes wait, unread, at its server end.
	for ends, s := range byEnds {
		if s.Remote != listen {
			continue
		}
		peer, ok := byEnds[[2]netip.AddrPort{ends[1], ends[0]}]
		if !ok || s.TCP.State != 1 || peer.TCP.State != 1 || peer.TCP.RecvQ.V == 0 || peer.TCP.RecvQ.V%10_000 != 0 {
			t.Errorf("dump-v4: client %v, server end %+v (found %v)", s, peer, ok)
		}
	}

	v6 := replayBatches(t, readBatches(t, "dump-v6"), false)
	if !v6.Done || len(v6.Sockets) != 3 {
		t.Fatalf("dump-v6: %d sockets, %v", len(v6.Sockets), v6.err)
	}
	for _, s := range v6.Sockets {
		if !s.IPv6 || s.Local.Addr() != netip.IPv6Loopback() || (s.TCP.State != 10 && s.Remote.Addr() != netip.IPv6Loopback()) {
			t.Errorf("dump-v6: socket %+v", s)
		}
	}

	list := replayBatches(t, readBatches(t, "list-v4"), true)
	if !list.Done || len(list.Briefs) != 13 {
		t.Errorf("list-v4: %d sockets, %v", len(list.Briefs), list.err)
	}
	for _, b := range list.Briefs {
		s, ok := byEnds[[2]netip.AddrPort{b.Local, b.Remote}]
		if !ok || s.Cookie != b.Cookie || s.Inode != b.Inode || s.TCP.State != b.TCP.State || s.TCP.Congestion != b.TCP.Congestion {
			t.Errorf("list-v4: %+v, the dump's %+v", b, s)
		}
	}

	get := replayBatches(t, readBatches(t, "lookup"), false)
	if !get.Done || len(get.Sockets) != 1 || get.Multi != 0 || get.Sockets[0].TCP.State != 1 {
		t.Errorf("lookup: %+v", get)
	} else if s := get.Sockets[0]; byEnds[[2]netip.AddrPort{s.Local, s.Remote}].Cookie != s.Cookie {
		t.Errorf("lookup found %v → %v, cookie %x, not in the dump", s.Local, s.Remote, s.Cookie)
	}
	// ENOENT is 2 on Linux, where it was recorded.
	if gone := replayBatches(t, readBatches(t, "lookup-enoent"), false); !gone.Done || len(gone.Sockets) != 0 || gone.err != Errno(2) {
		t.Errorf("lookup-enoent: %+v", gone)
	}
	for _, name := range []string{"truncated", "garbage"} {
		if r := replayBatches(t, readBatches(t, name), false); !errors.Is(r.err, ErrMalformed) {
			t.Errorf("%s: %v, want an error wrapping ErrMalformed", name, r.err)
		}
	}
}

// Every prefix of a recorded dump, cut anywhere, is an error (malformed
// or incomplete), never a panic or a short list taken for the whole.
func TestTruncatedDumps(t *testing.T) {
	littleEndian(t)
	for _, name := range []string{"dump-v4", "dump-v6"} {
		b := bytes.Join(readBatches(t, name), nil)
		for n := range len(b) {
			if _, err := Decode(b[:n]); err == nil {
				t.Fatalf("%s cut to %d of %d bytes: no error", name, n, len(b))
			} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrIncomplete) {
				t.Fatalf("%s cut to %d bytes: %v", name, n, err)
			}
		}
	}
}

// checkGolden compares v, as indented JSON, with the golden file at path
// (go test -update rewrites it).
func checkGolden(t *testing.T, path string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, path, append(got, '\n'))
}
