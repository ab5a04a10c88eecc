package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/term"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/sockdiag"
	"github.com/tcpscope/tcpscope/internal/watch"
)

// sockSource is the kernel's sockets as a watch.Source: those the filter
// matches, read through sock_diag, with their owning processes unless
// procs is nil.
type sockSource struct {
	conn  *sockdiag.Conn
	ns    *os.File // the network namespace entered, if any
	flt   sockdiag.Filter
	procs *sockdiag.Procs
}

var _ watch.Source = (*sockSource)(nil)

// openSockSource opens sock_diag, in the network namespace netns ("":
// this one).
func openSockSource(netns string, flt sockdiag.Filter, noProcess bool) (*sockSource, error) {
	s := &sockSource{flt: flt, procs: &sockdiag.Procs{}}
	nsfd := -1
	if netns != "" {
		ns, err := openNetns(netns)
		if err != nil {
			return nil, err
		}
		s.ns, nsfd = ns, int(ns.Fd())
	}
	conn, err := sockdiag.Open(nsfd)
	if err != nil {
		s.Close()
		if errors.Is(err, os.ErrPermission) {
			return nil, &permissionError{msg: "entering another network namespace needs root", hint: "sudo tcpscope watch --netns ..."}
		}
		return nil, err
	}
	s.conn = conn
	if noProcess {
		if flt.NeedsOwners() {
			s.Close()
			return nil, usagef("drop --no-process", "a pid filter needs the process lookup")
		}
		s.procs = nil
	}
	return s, nil
}

func (s *sockSource) Dump(at time.Duration) ([]model.Socket, error) {
	return s.conn.Dump(s.flt, at, s.procs)
}

func (s *sockSource) List(at time.Duration) ([]watch.ListRow, error) {
	return sockdiag.ListInto(s.conn, s.flt, at, s.procs, func(r *watch.ListRow) *model.SocketBrief { return &r.SocketBrief })
}

func (s *sockSource) Get(k model.Socket, at time.Duration) (model.Socket, bool, error) {
	return s.conn.Get(k, at)
}

// Close closes sock_diag and the namespace.
func (s *sockSource) Close() {
	if s.conn != nil {
		s.conn.Close()
	}
	if s.ns != nil {
		s.ns.Close()
	}
}

// openNetns opens a network namespace by ip-netns name or by PID.
func openNetns(spec string) (*os.File, error) {
	path := filepath.Join("/run/netns", spec)
	if pid, err := strconv.Atoi(spec); err == nil && pid > 0 {
		path = fmt.Sprintf("/proc/%d/ns/net", pid)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usagef("a name from 'ip netns list', or a PID", "network namespace %q: %v", spec, err)
		}
		return nil, &permissionError{msg: fmt.Sprintf("network namespace %q: %v", spec, err), hint: "sudo tcpscope watch --netns ..."}
	}
	return f, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
