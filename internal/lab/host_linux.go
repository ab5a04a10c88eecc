package lab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Command returns a command that runs name inside the host's namespace
// (through `ip netns exec`, which also shows it the namespace's /sys). The
// caller starts and waits for it. Closing the pair ends it if it is still
// running, and it gets SIGHUP if this process dies first (a shell then
// hangs up its jobs, as on a closed terminal; what survives that, Clean
// ends). The signal comes when the thread that started it ends, which Go
// does only to a thread left locked by an ending goroutine: start it from
// anywhere but inside Do, and nothing in this process may end threads on
// purpose (perf's one-CPU senders once did, and a stock iperf3 -s in a
// host took SIGHUP mid-test).
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	ip, err := toolPath("ip")
	cmd := exec.CommandContext(ctx, ip, append([]string{"netns", "exec", h.Name, name}, args...)...)
	cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGHUP}
	if err != nil {
		cmd.Err = err
	}
	return cmd
}

// Do runs fn on an OS thread switched into the host's namespace, so that
// sockets fn creates belong to the host. A socket keeps its namespace for
// life: a listener or connection made in fn may be used from any goroutine
// afterwards. Only fn's own goroutine is in the namespace; goroutines it
// starts are not, and neither is name resolution, so dial IP addresses.
//
// fn runs on a goroutine of its own whose thread is locked for the call. A
// panic in fn is re-raised in the caller after the namespace is restored.
// If the original namespace cannot be restored, the thread is left locked
// when its goroutine ends, which makes the Go runtime discard it rather than
// run other goroutines in the wrong namespace.
func (h *Host) Do(fn func() error) error {
	type outcome struct {
		err      error
		panicked bool
		value    any
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		exited := true
		defer func() {
			// fn called runtime.Goexit (t.FailNow, say): the thread is
			// still locked and still in the namespace, so it dies with
			// this goroutine; the caller gets an error instead of a hang.
			if exited {
				o.err = errors.Join(o.err, fmt.Errorf("lab: %s: fn called runtime.Goexit inside Do", h.Name))
			}
			done <- o
		}()
		runtime.LockOSThread()
		restored := h.inNamespace(func() {
			defer func() {
				if v := recover(); v != nil {
					o.panicked, o.value = true, v
				}
			}()
			o.err = fn()
		}, &o.err)
		exited = false
		if restored {
			runtime.UnlockOSThread()
		}
	}()
	o := <-done
	if o.panicked {
		panic(o.value)
	}
	return o.err
}

// inNamespace switches the calling (locked) thread into the host's
// namespace, calls fn and switches back. Setup failures are stored in
// *errp. It reports whether the thread is back in its original namespace.
func (h *Host) inNamespace(fn func(), errp *error) (restored bool) {
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		*errp = fmt.Errorf("lab: open own network namespace: %w", err)
		return true
	}
	defer unix.Close(orig)
	target, err := unix.Open(netnsFile(h.Name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		*errp = fmt.Errorf("lab: open namespace of %s: %w", h.Name, err)
		return true
	}
	err = unix.Setns(target, unix.CLONE_NEWNET)
	unix.Close(target)
	if err != nil {
		*errp = fmt.Errorf("lab: enter namespace %s: %w", h.Name, err)
		return true
	}
	fn()
	if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
		*errp = errors.Join(*errp, fmt.Errorf("lab: leave namespace %s: %w (thread discarded)", h.Name, err))
		return false
	}
	return true
}

// Listen opens a listener inside the host's namespace, e.g.
// h.Listen(ctx, "tcp", netip.AddrPortFrom(h.Addr, 0).String()).
func (h *Host) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	var ln net.Listener
	err := h.Do(func() (err error) {
		ln, err = new(net.ListenConfig).Listen(ctx, network, address)
		return err
	})
	return ln, err
}

// Dial connects from inside the host's namespace. Use an IP address:
// name resolution would run outside the namespace.
func (h *Host) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	var c net.Conn
	err := h.Do(func() (err error) {
		c, err = new(net.Dialer).DialContext(ctx, network, address)
		return err
	})
	return c, err
}

// SetSysctl writes a net.* sysctl inside the host's namespace, e.g.
// SetSysctl("net.ipv4.tcp_sack", "0"). The host machine's value is not
// touched. A key the kernel keeps once per machine and shows read-only in a
// namespace fails with ErrHostWide.
func (h *Host) SetSysctl(key, value string) error {
	path, err := sysctlPath(key)
	if err != nil {
		return err
	}
	err = h.Do(func() error {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, werr := f.WriteString(value)
		return errors.Join(werr, f.Close())
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrPermission):
		// Root is refused only where the kernel shows a namespace a
		// read-only mirror of a setting it keeps once per machine.
		return fmt.Errorf("%w: %s: set %s=%s: %w", ErrHostWide, h.Name, key, value, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("lab: %s: set %s=%s: no such sysctl in a network namespace "+
			"(misspelt, missing from this kernel, or kept once per machine): %w", h.Name, key, value, err)
	}
	return fmt.Errorf("lab: %s: set %s=%s: %w", h.Name, key, value, err)
}

// Sysctl reads a net.* sysctl as the host's namespace sees it, with
// surrounding space trimmed (multi-value keys such as tcp_rmem keep the
// kernel's tabs between values).
func (h *Host) Sysctl(key string) (string, error) {
	path, err := sysctlPath(key)
	if err != nil {
		return "", err
	}
	var b []byte
	err = h.Do(func() (err error) {
		b, err = os.ReadFile(path)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("lab: %s: read %s: %w", h.Name, key, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// requireHostWide checks a setting the kernel keeps once per machine. It
// passes when the host's value (as seen from the namespace) already equals
// want, or when this kernel lets the namespace set its own; otherwise it
// fails with ErrHostWide and changes nothing. want 0 means "don't care".
func (h *Host) requireHostWide(key string, want int64) error {
	if want == 0 {
		return nil
	}
	ws := strconv.FormatInt(want, 10)
	got, rerr := h.Sysctl(key)
	if rerr == nil && got == ws {
		return nil
	}
	if h.SetSysctl(key, ws) == nil {
		return nil
	}
	have := got
	if rerr != nil {
		have = "not visible in a network namespace"
	}
	return fmt.Errorf("%w: %s: %s is %s for the whole machine, %s was asked; "+
		"set it on the host (sysctl -w %s=%s) or leave it unset and use tcp_rmem/tcp_wmem",
		ErrHostWide, h.Name, key, have, ws, key, ws)
}
