package measure

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/dial"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/perf/perftest"
	"github.com/tcpscope/tcpscope/internal/serve"
)

func fakeHost(context.Context) (model.HostInfo, error) {
	return model.HostInfo{Kernel: "6.18.0", Sysctls: map[string]string{"net.ipv4.tcp_congestion_control": "cubic"}}, nil
}

func fakePath(context.Context, string) (model.PathFacts, error) {
	return model.PathFacts{RTTMin: 50 * time.Microsecond, RTTMedian: 60 * time.Microsecond, Connects: 5, MSS: 65483, PMTU: 65535}, nil
}

// The method reads the host, then the path, then tests each way asked,
// telling each step in order, and merges the findings; every run keeps
// its diagnosis.
func TestLayeredSteps(t *testing.T) {
	addr := perftest.Serve(t, perf.Add(&serve.Server{Version: "test"}))
	var steps []int
	l := &Layered{Client: &perf.Client{Version: "test", Dialer: dial.Dialer{Network: "tcp"}}, Duration: 300 * time.Millisecond,
		Reverse: []bool{false, true}, ReadHost: fakeHost, ProbePath: fakePath,
		Progress: func(p Progress) {
			steps = append(steps, p.Step)
			if p.Step == 3 && (p.Run == nil || len(p.Limits) != 1) {
				t.Errorf("a test's step without its run or its limit: %+v", p)
			}
		}}
	res, testErr, err := l.Run(context.Background(), addr)
	if err != nil || testErr != nil {
		t.Fatalf("err %v, test error %v", err, testErr)
	}
	if want := []int{1, 2, 3, 3}; !slices.Equal(steps, want) {
		t.Errorf("steps %v, want %v", steps, want)
	}
	if len(res.Runs) != 2 || len(res.Limits) != 2 || res.Took <= 0 || res.Host.Kernel != "6.18.0" || res.Path.MSS != 65483 {
		t.Fatalf("report: %d runs, %d limits, took %v, host %q, MSS %d", len(res.Runs), len(res.Limits), res.Took, res.Host.Kernel, res.Path.MSS)
	}
	for i, run := range res.Runs {
		if run.Diagnosis == nil || run.Config.Reverse != (i == 1) {
			t.Errorf("run %d: reverse %v, diagnosis %v", i, run.Config.Reverse, run.Diagnosis)
		}
	}
	if res.Limits[0].Direction != model.ClientToServer || res.Limits[1].Direction != model.ServerToClient {
		t.Errorf("limits in the wrong order: %+v", res.Limits)
	}
}

// An unreachable path stops the method before any test, with the
// probe's error for the caller to classify.
func TestLayeredPathUnreachable(t *testing.T) {
	dial := errors.New("connect: connection refused")
	tested := false
	l := &Layered{Client: &perf.Client{Version: "test"}, Reverse: []bool{false}, ReadHost: fakeHost,
		ProbePath: func(context.Context, string) (model.PathFacts, error) { return model.PathFacts{}, dial },
		Progress:  func(p Progress) { tested = tested || p.Step == 3 }}
	_, _, err := l.Run(context.Background(), "127.0.0.1:9")
	var pe *PathError
	if !errors.As(err, &pe) || !errors.Is(err, dial) || tested {
		t.Errorf("err %v (a PathError: %v), tested %v", err, errors.As(err, &pe), tested)
	}
}

// A test's run comes with its diagnosis unless asked not to.
func TestRunDiagnosis(t *testing.T) {
	addr := perftest.Serve(t, perf.Add(&serve.Server{Version: "test"}))
	cfg := model.TestConfig{Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}
	for _, none := range []bool{false, true} {
		run, err := (&Test{Client: &perf.Client{Version: "test"}, NoDiagnosis: none}).Run(context.Background(), addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if (run.Diagnosis == nil) != none {
			t.Errorf("NoDiagnosis %v: %d findings", none, len(run.Diagnosis))
		}
	}
}
