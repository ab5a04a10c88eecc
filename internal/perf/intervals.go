package perf

import (
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// intervalQueue is how many intervals may wait for the network before
// the client counts as not reading.
const intervalQueue = 64

// intervalSender sends a server's intervals to its client from a
// goroutine of its own, so that the sampler never waits on the network.
// It sends each interval as it comes, or, given a tick, what has come by
// each tick in one write: below batchEvery nobody reads 100 lines a
// second, and every send wakes both processes, which costs measurable
// throughput when sampling every 10 ms.
type intervalSender struct {
	queue chan model.Interval
	done  chan struct{}
	// err is the first send's failure; read it once done is closed.
	err error
}

// startIntervalSender starts sending intervals with send, at each tick
// when tick is not nil. On the first failed send it calls onFail and
// sends nothing more.
func startIntervalSender(send func(...*message) error, tick <-chan time.Time, onFail func()) *intervalSender {
	q := &intervalSender{queue: make(chan model.Interval, intervalQueue), done: make(chan struct{})}
	go q.run(send, tick, onFail)
	return q
}

func (q *intervalSender) run(send func(...*message) error, tick <-chan time.Time, onFail func()) {
	defer close(q.done)
	var batch []*message
	flush := func() {
		if len(batch) > 0 && q.err == nil {
			if err := send(batch...); err != nil {
				q.err = err
				onFail()
			}
		}
		batch = batch[:0]
	}
	for {
		select {
		case iv, ok := <-q.queue:
			if !ok {
				flush()
				return
			}
			batch = append(batch, &message{Type: msgInterval, Interval: &iv})
			if tick == nil {
				flush()
			}
		case <-tick:
			flush()
		}
	}
}

// add queues iv for sending. It reports false, queuing nothing, when
// the queue is full: a client a queue behind is not reading.
func (q *intervalSender) add(iv model.Interval) bool {
	select {
	case q.queue <- iv:
		return true
	default:
		return false
	}
}

// close sends what is queued, stops, and returns the first send's
// failure. Nothing may be added after it.
func (q *intervalSender) close() error {
	close(q.queue)
	<-q.done
	return q.err
}
