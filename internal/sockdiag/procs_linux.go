package sockdiag

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Procs maps socket inodes to the processes holding them, from
// /proc/PID/fd. Other users' processes are visible only to root (or with
// CAP_SYS_PTRACE); their sockets keep PID 0.
type Procs struct {
	// Root is where /proc is; "" means "/".
	Root  string
	byIno map[uint32]proc
	at    time.Time
}

type proc struct {
	pid  int
	name string
}

// procsTTL: the map is rebuilt at most this often; a new connection's
// owner appears within it.
const procsTTL = 2 * time.Second

// Fill sets PID and Process of the sockets whose inode it knows,
// rescanning /proc when the map is older than procsTTL or an inode is new.
func (p *Procs) Fill(socks []model.Socket) {
	fill(p, socks, func(s *model.Socket) (uint32, *int, *string) { return s.Inode, &s.PID, &s.Process })
}

// fill is Fill for any socket type; owner gives a socket's inode and
// where its owner goes.
func fill[S any](p *Procs, socks []S, owner func(*S) (ino uint32, pid *int, name *string)) {
	missing := false
	for i := range socks {
		ino, _, _ := owner(&socks[i])
		if _, ok := p.byIno[ino]; !ok && ino != 0 {
			missing = true
			break
		}
	}
	if p.byIno == nil || (missing && time.Since(p.at) > 200*time.Millisecond) || time.Since(p.at) > procsTTL {
		p.scan()
	}
	for i := range socks {
		ino, pid, name := owner(&socks[i])
		if pr, ok := p.byIno[ino]; ok {
			*pid, *name = pr.pid, pr.name
		}
	}
}

func (p *Procs) scan() {
	root := p.Root
	if root == "" {
		root = "/"
	}
	p.byIno, p.at = map[uint32]proc{}, time.Now()
	dirs, err := os.ReadDir(filepath.Join(root, "proc"))
	if err != nil {
		return
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join(root, "proc", d.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or not ours to see
		}
		name := ""
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]"), 10, 32)
			if err != nil {
				continue
			}
			if name == "" {
				b, _ := os.ReadFile(filepath.Join(root, "proc", d.Name(), "comm"))
				name = strings.TrimSpace(string(b))
			}
			if _, seen := p.byIno[uint32(ino)]; !seen {
				p.byIno[uint32(ino)] = proc{pid: pid, name: name}
			}
		}
	}
}
