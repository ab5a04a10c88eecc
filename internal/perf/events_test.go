package perf

import (
	"context"
	"sync"
	"testing"

	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// The gate's subscribers hear a test's admission, each interval of the
// server's end as it is sampled (the ones the client receives, in order),
// and its end with the server's record.
func TestServerPublishesIntervals(t *testing.T) {
	var mu sync.Mutex
	var kinds []gate.Kind
	var indexes []int
	srv := Add(&serve.Server{Version: "test"})
	srv.Subscribe(func(e gate.Event) {
		mu.Lock()
		defer mu.Unlock()
		kinds = append(kinds, e.Kind)
		if e.Kind == gate.Interval {
			indexes = append(indexes, e.Interval.Index)
		}
	})
	addr := serveWith(t, srv)
	run, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the test's end event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(kinds) > 0 && kinds[len(kinds)-1] == gate.Ended
	})
	mu.Lock()
	defer mu.Unlock()
	want := len(run.Remote.Intervals)
	if want == 0 || len(indexes) != want || kinds[0] != gate.Admitted {
		t.Fatalf("events %v, interval indexes %v; the client got %d of the server's intervals", kinds, indexes, want)
	}
	for i, idx := range indexes {
		if idx != run.Remote.Intervals[i].Index {
			t.Errorf("interval event %d has index %d, the client's %d", i, idx, run.Remote.Intervals[i].Index)
		}
	}
}
