package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sys/unix"
)

const (
	// superuser is the role initdb creates. It is fixed (-U) so the DSN
	// does not depend on which OS user ran the server.
	superuser = "postgres"
	// database is the empty database handed to the test.
	database = "tcpscope"

	initdbTimeout = 60 * time.Second
	readyTimeout  = 30 * time.Second
	// stopTimeout bounds the wait for an immediate shutdown; past it the
	// whole process group is killed so a stuck server cannot hang the test
	// binary.
	stopTimeout = 10 * time.Second
	killTimeout = 5 * time.Second
	// portAttempts covers the race between picking a free port and the
	// server binding it.
	portAttempts = 3
	// logTail is how much of the server log goes into a failure message.
	logTail = 4 << 10

	// dirPattern names the private directories, so that sweepStale can
	// find those of test binaries that died without cleaning up.
	dirPattern = "tcpscope-pg-"
	// lockName is a file in the private dir that Start holds flock'ed for
	// the life of the test binary; the kernel drops the lock when the
	// binary dies, however it dies.
	lockName = "owner.lock"
	// staleAge keeps sweepStale off a dir whose owner has created the lock
	// file but not yet locked it.
	staleAge = 10 * time.Second
)

// errNotInstalled means no usable initdb/postgres pair was found.
var errNotInstalled = errors.New("PostgreSQL server binaries (initdb, postgres) not found " +
	"in /usr/lib/postgresql/*/bin, pg_config --bindir or PATH; " +
	"install them with: apt-get install postgresql (or run make setup as root)")

// errPortInUse means the server lost the race for its port; another port
// is worth a try.
var errPortInUse = errors.New("port already in use")

// Start starts a private PostgreSQL server for the test and returns a DSN
// (postgres://postgres@127.0.0.1:PORT/tcpscope?sslmode=disable) for a fresh,
// empty database on it. Each call starts its own server.
//
// It skips the test when PostgreSQL's server binaries are not installed (the
// message says to apt-get install postgresql) and fails it on any other
// error. Everything it creates (data directory, server process, socket and
// shared memory) is removed in t.Cleanup, even when the test fails.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := findBinDir()
	if err != nil {
		t.Skipf("pgtest: %v", err)
	}
	cred, err := serverCredential()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}

	// A killed test binary (timeout, ^C) cannot run its cleanups; its
	// server dies with it (Pdeathsig) but its ~40 MB dir would stay.
	sweepStale(t)

	// A directory of our own rather than t.TempDir: the server may run as
	// the postgres user, which cannot traverse t.TempDir's 0700 root-owned
	// parents. os.MkdirTemp's parent ($TMPDIR, normally /tmp) is world
	// traversable.
	dir, err := os.MkdirTemp("", dirPattern)
	if err != nil {
		t.Fatalf("pgtest: create temp dir: %v", err)
	}
	lock, err := lockDir(dir)
	// Registered first so it runs last, after the server has stopped.
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("pgtest: remove %s: %v", dir, err)
		}
		if lock != nil {
			lock.Close()
		}
	})
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatalf("pgtest: chown %s to the postgres user: %v", dir, err)
		}
	}

	data := filepath.Join(dir, "data")
	if err := initdb(bin, dir, data, cred); err != nil {
		t.Fatalf("pgtest: %v", err)
	}

	var srv *server
	for attempt := 1; ; attempt++ {
		srv, err = startServer(t.Context(), bin, dir, data, cred)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortInUse) || attempt == portAttempts {
			t.Fatalf("pgtest: %v", err)
		}
	}
	t.Cleanup(func() {
		if err := srv.stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, srv.port, database)
}

// findBinDir returns the directory holding initdb and postgres, preferring
// the newest Debian-style versioned install, then pg_config, then PATH.
func findBinDir() (string, error) {
	versioned, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest first: "16" must beat "9.6", so compare numerically.
	slices.SortFunc(versioned, func(a, b string) int {
		return compareVersions(filepath.Base(filepath.Dir(b)), filepath.Base(filepath.Dir(a)))
	})
	candidates := versioned
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		// A symlink in PATH (e.g. /usr/local/bin/initdb) points at the
		// real bin dir, which is where postgres lives too.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	for _, dir := range candidates {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", errNotInstalled
}

// compareVersions compares dotted numeric versions such as "15" and "9.6".
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var na, nb int
		if i < len(pa) {
			na, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			nb, _ = strconv.Atoi(pb[i])
		}
		if na != nb {
			return na - nb
		}
	}
	return 0
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// serverCredential returns the identity to run initdb and postgres as:
// the postgres system user when we are root (both refuse to run as root),
// nil (the current user) otherwise.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("look up the postgres system user (initdb and postgres refuse to run as root): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse uid %q of user postgres: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse gid %q of user postgres: %w", u.Gid, err)
	}
	// Groups left empty: the child drops root's supplementary groups.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// command prepares a PostgreSQL binary to run in dir as cred.
func command(ctx context.Context, name, dir string, cred *syscall.Credential, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	// The child's cwd must be reachable by the postgres user; the test's
	// cwd (the package dir) may not be.
	cmd.Dir = dir
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: cred,
		// Own process group, so stop can kill the postmaster and every
		// backend at once.
		Setpgid: true,
		// If the test binary dies without running its cleanups (timeout
		// panic, SIGKILL), take the server down with it instead of leaving
		// it running.
		Pdeathsig: syscall.SIGKILL,
	}
	return cmd
}

// childEnv is the environment minus anything that could redirect or alter
// the server (PGDATA, PGPORT, PGHOST, locale), with messages in plain C so
// errors in the log can be recognised.
func childEnv() []string {
	env := []string{"LC_ALL=C"}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PG") || strings.HasPrefix(name, "LC_") || name == "LANG" || name == "LANGUAGE" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// initdb creates the cluster in data.
func initdb(bin, dir, data string, cred *syscall.Credential) error {
	ctx, cancel := context.WithTimeout(context.Background(), initdbTimeout)
	defer cancel()
	cmd := command(ctx, filepath.Join(bin, "initdb"), dir, cred,
		"--pgdata", data,
		"--username", superuser,
		"--auth", "trust", // local and host 127.0.0.1 connect without a password
		"--encoding", "UTF8",
		"--no-locale", // C locale: identical sorting on every machine
		"--no-sync",   // nothing here needs to survive a crash
	)
	cmd.WaitDelay = killTimeout
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb %s: %w\n%s", data, err, out)
	}
	return nil
}

// server is one running postmaster.
type server struct {
	cmd     *exec.Cmd
	port    int
	logPath string
	exited  chan struct{} // closed once cmd.Wait has returned
	waitErr error         // cmd.Wait's result, valid after exited is closed
}

// startServer starts postgres on a free 127.0.0.1 port and waits until it
// accepts connections, then creates the test database. The returned server
// must be stopped; on error nothing is left running.
func startServer(ctx context.Context, bin, dir, data string, cred *syscall.Credential) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, fmt.Sprintf("postgres-%d.log", port))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create server log: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor

	// Not CommandContext: the server's lifetime is governed by stop, not
	// by a context.
	cmd := command(context.Background(), filepath.Join(bin, "postgres"), dir, cred,
		"-D", data,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		// The socket (and its lock file) go in the private data dir, not
		// /var/run/postgresql, which may be missing or owned by a system
		// cluster.
		"-c", "unix_socket_directories="+data,
		// Speed over durability: the cluster is thrown away.
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		// Dynamic shared memory as files in the data dir rather than in
		// /dev/shm, so that nothing of it outlives the dir if the server
		// is ever SIGKILLed.
		"-c", "dynamic_shared_memory_type=mmap",
	)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &server{cmd: cmd, port: port, logPath: logPath, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	if err := s.createDatabase(ctx); err != nil {
		if stopErr := s.stop(); stopErr != nil {
			err = fmt.Errorf("%w (and %v)", err, stopErr)
		}
		return nil, err
	}
	return s, nil
}

// freePort asks the kernel for a free port on 127.0.0.1. Another process
// may take it before postgres binds it; startServer's caller retries.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// createDatabase connects as soon as the server accepts connections (it
// refuses them, or answers "starting up", until then) and creates the
// test's database.
func (s *server) createDatabase(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	dsn := fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", superuser, s.port)
	var conn *pgconn.PgConn
	for {
		select {
		case <-s.exited:
			log := s.log()
			if strings.Contains(log, "Address already in use") {
				return fmt.Errorf("postgres on port %d: %w", s.port, errPortInUse)
			}
			return fmt.Errorf("postgres exited before accepting connections (%v); log:\n%s", s.waitErr, log)
		default:
		}
		var err error
		conn, err = pgconn.Connect(ctx, dsn)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for postgres on port %d to accept connections: %w (last error: %v); log:\n%s",
				s.port, ctx.Err(), err, s.log())
		case <-time.After(20 * time.Millisecond):
		}
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+database).ReadAll(); err != nil {
		return fmt.Errorf("create database %s: %w; log:\n%s", database, err, s.log())
	}
	return nil
}

// log returns the tail of the server log, for failure messages.
func (s *server) log() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(read %s: %v)", s.logPath, err)
	}
	if len(b) > logTail {
		b = b[len(b)-logTail:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// stop shuts the server down and waits for it: an immediate shutdown
// (SIGQUIT, no checkpoint, the data is discarded anyway), then SIGKILL to
// the whole process group if that does not finish in time.
func (s *server) stop() error {
	pid := s.cmd.Process.Pid
	_ = s.cmd.Process.Signal(syscall.SIGQUIT) // fails only if already exited
	var err error
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		err = fmt.Errorf("postgres (pid %d) ignored immediate shutdown for %v; killed it", pid, stopTimeout)
	}
	// The postmaster normally reaps its backends before exiting; killing
	// the group as well guarantees none outlives the test.
	if kerr := syscall.Kill(-pid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, syscall.ESRCH) {
		err = errors.Join(err, fmt.Errorf("kill postgres process group %d: %w", pid, kerr))
	}
	select {
	case <-s.exited:
	case <-time.After(killTimeout):
		err = errors.Join(err, fmt.Errorf("postgres (pid %d) still running %v after SIGKILL", pid, killTimeout))
	}
	return err
}

// lockDir creates and flocks dir's lock file; the returned file must stay
// open for as long as the dir is in use.
func lockDir(dir string) (*os.File, error) {
	// O_CLOEXEC (Go's default) keeps the lock out of the server processes:
	// it must die with the test binary, not with postgres.
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return f, nil
}

// sweepStale removes the private dirs (and the server's System V shared
// memory segment) left by test binaries that died without running their
// cleanups. It is best effort: whatever it cannot prove stale, or cannot
// remove (another user's), it leaves alone.
func sweepStale(t testing.TB) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPattern+"*"))
	for _, dir := range dirs {
		if err := sweepDir(dir); err != nil {
			t.Logf("pgtest: leave %s: %v", dir, err)
		}
	}
}

// sweepDir removes dir if its owner is dead: its lock file exists, is
// older than staleAge and is not locked. A nil error with dir still
// present means dir is in use.
func sweepDir(dir string) error {
	lockPath := filepath.Join(dir, lockName)
	fi, err := os.Stat(lockPath)
	if err != nil || time.Since(fi.ModTime()) < staleAge {
		return nil // being set up, in use, or not ours to judge
	}
	f, err := os.Open(lockPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return nil // its test binary is alive (or another sweeper has it)
	}
	data := filepath.Join(dir, "data")
	if pid, shmid, ok := readPidFile(data); ok {
		if syscall.Kill(pid, 0) == nil {
			// The postmaster is still exiting after Pdeathsig's SIGKILL;
			// a later Start will finish the job.
			return nil
		}
		// PostgreSQL keeps a small System V segment as a lock against two
		// postmasters on one data dir; only a clean shutdown removes it.
		var ds unix.SysvShmDesc
		if _, err := unix.SysvShmCtl(shmid, unix.IPC_STAT, &ds); err == nil && ds.Nattch == 0 {
			if _, err := unix.SysvShmCtl(shmid, unix.IPC_RMID, nil); err != nil {
				return fmt.Errorf("remove shared memory segment %d: %w", shmid, err)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	return nil
}

// readPidFile reads the postmaster's pid (line 1) and System V shared
// memory id (line 7, "key id") from data/postmaster.pid.
func readPidFile(data string) (pid, shmid int, ok bool) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return 0, 0, false
	}
	pid, err = strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil {
		return 0, 0, false
	}
	fields := strings.Fields(lines[6])
	if len(fields) != 2 {
		return 0, 0, false
	}
	shmid, err = strconv.Atoi(fields[1])
	if err != nil {
		return 0, 0, false
	}
	return pid, shmid, true
}
