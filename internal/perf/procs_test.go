package perf

import "testing"

// fakeProcs stands for the runtime's GOMAXPROCS in Procs's tests, so
// they change nothing in the process that runs them.
type fakeProcs struct {
	def, cur, sets, resets int
	env                    bool
}

func (p *fakeProcs) share() *Procs {
	return &Procs{
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

// TestFairShareNil: a nil Procs changes nothing, and detaches nothing.
func TestFairShareNil(t *testing.T) {
	var f *Procs
	f.join(1)()
	if release, ok := f.hold(); ok || release != nil {
		t.Error("a nil Procs let a stream be detached")
	}
}

// TestProcsDetached: each detached stream adds a P to the default while
// its socket is open, beside the fair share; a GOMAXPROCS the user set
// detaches nothing.
func TestProcsDetached(t *testing.T) {
	p := &fakeProcs{def: 2, cur: 2}
	f := p.share()
	r1, ok1 := f.hold()
	r2, ok2 := f.hold()
	if !ok1 || !ok2 || p.cur != 4 {
		t.Fatalf("two detached streams: GOMAXPROCS %d (held %v %v), want 4", p.cur, ok1, ok2)
	}
	leave := f.join(fairFloor + 8) // 16 admitted streams: 16 Ps
	if p.cur != 16 {
		t.Errorf("16 admitted streams, 2 detached: GOMAXPROCS %d, want 16", p.cur)
	}
	leave()
	if p.cur != 4 {
		t.Errorf("the admitted streams gone: GOMAXPROCS %d, want 4", p.cur)
	}
	r1()
	r1() // once
	if p.cur != 3 {
		t.Errorf("one detached stream left: GOMAXPROCS %d, want 3", p.cur)
	}
	r2()
	if p.cur != 2 || p.resets != 1 {
		t.Errorf("none left: GOMAXPROCS %d after %d resets, want the default 2 after 1", p.cur, p.resets)
	}

	u := &fakeProcs{def: 2, cur: 2, env: true}
	if _, ok := u.share().hold(); ok || u.sets != 0 {
		t.Errorf("GOMAXPROCS from the environment: a stream detached, or %d sets", u.sets)
	}
}
