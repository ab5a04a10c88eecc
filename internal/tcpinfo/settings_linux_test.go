package tcpinfo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// TestSettings reads a fixture /proc/sys: every setting as written, a
// missing one absent (not zero), a malformed one absent, and none at all
// nil.
func TestSettings(t *testing.T) {
	root := t.TempDir()
	write := func(key, v string) {
		p := filepath.Join(root, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if s := settingsFrom(root); s != nil {
		t.Fatalf("an empty tree read as %+v", s)
	}
	write("net/ipv4/tcp_rmem", "4096\t131072\t6291456")
	write("net/ipv4/tcp_wmem", "4096 16384 x")
	write("net/core/rmem_max", "212992")
	write("net/ipv4/tcp_moderate_rcvbuf", "0")
	s := settingsFrom(root)
	if got, ok := s.Rmem.Get(); !ok || got != (model.BufferBounds{Min: 4096, Default: 131072, Max: 6291456}) {
		t.Errorf("tcp_rmem %v", s.Rmem)
	}
	if s.Wmem.OK || s.WmemMax.OK || s.WindowScaling.OK {
		t.Errorf("malformed or missing read as present: %+v", s)
	}
	if v, ok := s.RmemMax.Get(); !ok || v != 212992 {
		t.Errorf("rmem_max %v", s.RmemMax)
	}
	if v, ok := s.Autotuning.Get(); !ok || v {
		t.Errorf("moderate_rcvbuf %v", s.Autotuning)
	}
	if Settings() == nil {
		t.Error("this machine's /proc/sys read as nothing")
	}
}
