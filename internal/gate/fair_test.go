package gate

import "testing"

// fakeProcs stands for the runtime's GOMAXPROCS in fairShare's tests, so
// they change nothing in the process that runs them.
type fakeProcs struct {
	def, cur, sets, resets int
	env                    bool
}

func (p *fakeProcs) share() *fairShare {
	return &fairShare{
		procs: func(n int) int {
			old := p.cur
			if n > 0 {
				p.cur = n
				p.sets++
			}
			return old
		},
		reset:   func() { p.cur = p.def; p.resets++ },
		userSet: func() bool { return p.env },
	}
}

// TestFairShareFollowsStreams: GOMAXPROCS stays the default for a few
// streams, rises to a power of two at least the streams when they are
// many, and is the runtime's default again when they have ended.
func TestFairShareFollowsStreams(t *testing.T) {
	p := &fakeProcs{def: 2, cur: 2}
	f := p.share()
	var leaves []func()
	for range fairFloor {
		leaves = append(leaves, f.join(1))
	}
	if p.cur != 2 || p.sets != 0 {
		t.Fatalf("%d streams: GOMAXPROCS %d after %d sets, want the default 2 untouched", fairFloor, p.cur, p.sets)
	}
	for range 64 - fairFloor {
		leaves = append(leaves, f.join(1))
	}
	if p.cur != 64 {
		t.Fatalf("64 streams: GOMAXPROCS %d, want 64", p.cur)
	}
	if p.sets > 4 {
		t.Errorf("raising to 64 took %d sets; powers of two from 16 take 3", p.sets)
	}
	for _, leave := range leaves[:40] {
		leave()
	}
	if p.cur != 32 {
		t.Errorf("24 streams left: GOMAXPROCS %d, want 32", p.cur)
	}
	for _, leave := range leaves[40:] {
		leave()
	}
	if p.cur != 2 || p.resets != 1 {
		t.Errorf("all streams ended: GOMAXPROCS %d after %d resets, want the default 2 after 1", p.cur, p.resets)
	}
}

// TestFairShareLeavesUsersSetting: a GOMAXPROCS in the environment is
// never changed.
func TestFairShareLeavesUsersSetting(t *testing.T) {
	p := &fakeProcs{def: 2, cur: 3, env: true}
	f := p.share()
	for range 100 {
		defer f.join(1)()
	}
	if p.cur != 3 || p.sets != 0 {
		t.Errorf("GOMAXPROCS from the environment: now %d after %d sets, want 3 untouched", p.cur, p.sets)
	}
}

// TestFairShareNil: a client's end has no share, and joining it is free.
func TestFairShareNil(t *testing.T) {
	var f *fairShare
	f.join(1)()
}
