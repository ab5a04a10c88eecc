// Package labtest gives tests lab pairs that are always torn down: Pair
// skips the test where the lab cannot run (not Linux, not root, no iproute2),
// removes leftovers of earlier killed runs, and closes the pair when the
// test ends, passed or failed.
//
// Teardown by kind of ending:
//
//   - The test passes, fails or calls t.Fatal: t.Cleanup closes the pair.
//   - SIGINT or SIGTERM (Ctrl-C, or CI cancelling the job): a handler closes
//     every open pair, then re-raises the signal so the process still dies
//     of it.
//   - SIGKILL, or the -timeout panic of `go test`: nothing can run, and the
//     namespaces stay. The next Pair call (in any test binary) runs
//     lab.Clean, which removes namespaces whose creating process is gone;
//     `ip netns list | grep tcpscope-` shows what is left meanwhile.
//
// Kept apart from package lab so that production code never imports
// "testing".
package labtest

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"

	"github.com/tcpscope/tcpscope/internal/lab"
)

// Pair returns a pair built from cfg that is closed when the test ends. It
// skips the test when the lab cannot run here and fails it when the pair
// cannot be built.
func Pair(t testing.TB, cfg lab.PairConfig) *lab.Pair {
	t.Helper()
	Require(t)
	p, err := lab.NewPair(t.Context(), cfg)
	if err != nil {
		t.Fatalf("labtest: %v", err)
	}
	track(p)
	t.Cleanup(func() {
		untrack(p)
		if err := p.Close(); err != nil {
			t.Errorf("labtest: close pair: %v", err)
		}
	})
	return p
}

// Require skips the test unless this process can build lab pairs, and on
// first use removes what killed runs left behind. -short skips it too:
// that tier is the pure and loopback tests, and a namespace test's
// physics windows do not hold under the race detector, which runs it.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("namespace test: needs root and network namespaces; skipped with -short (run without -short, as root)")
	}
	if err := lab.Check(); err != nil {
		if errors.Is(err, lab.ErrNotSupported) || errors.Is(err, lab.ErrPermission) || errors.Is(err, lab.ErrMissingTool) {
			t.Skip(err.Error())
		}
		t.Fatalf("labtest: %v", err)
	}
	cleanOnce.Do(func() { _, cleanErr = lab.Clean(context.Background()) })
	if cleanErr != nil {
		t.Fatalf("labtest: removing leftovers of earlier runs: %v", cleanErr)
	}
}

// Process-wide state: signals and leftovers belong to the process, not to
// one test.
var (
	cleanOnce sync.Once
	cleanErr  error

	mu      sync.Mutex
	open    = map[*lab.Pair]bool{}
	watchMu sync.Once
)

func track(p *lab.Pair) {
	watchMu.Do(watchSignals)
	mu.Lock()
	open[p] = true
	mu.Unlock()
}

func untrack(p *lab.Pair) {
	mu.Lock()
	delete(open, p)
	mu.Unlock()
}

// watchSignals closes every open pair on SIGINT or SIGTERM, then restores
// the default action and re-raises the signal, so the test binary ends as
// it would have without us.
func watchSignals() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		mu.Lock()
		for p := range open {
			p.Close()
		}
		mu.Unlock()
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		if proc, err := os.FindProcess(os.Getpid()); err == nil && proc.Signal(sig) == nil {
			select {} // the re-raised signal ends the process
		}
		os.Exit(1)
	}()
}
