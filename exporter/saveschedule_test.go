package exporter

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// simulate runs a commitSchedule as Run does, on a stepped clock: the state
// loaded at 0, then a change at each of changes (ascending), a commit
// whenever one is due (before a change due at the same instant), each commit
// in flight for took, during which changes arrive and wait, and idleCost
// times took idle after it. It returns when
// the commits began and how many of changes each one holds; failAt lists
// commits (by number) that fail.
func simulate(gap, took time.Duration, changes []time.Duration, failAt ...int) (commits []time.Duration, held []int) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := newCommitSchedule(gap)
	now := base
	s.change(now)
	for i := 0; ; {
		at, ok := s.due()
		switch {
		case ok && (i == len(changes) || !at.After(base.Add(changes[i]))):
			now = later(now, at) // else a deadline passed (the zero time: at once)
			s.begin(now)
			if slices.Contains(failAt, len(commits)) {
				s.failed(now)
				held = append(held, 0)
			} else {
				held = append(held, i)
			}
			commits = append(commits, now.Sub(base))
			began := now
			now = now.Add(took) // what arrives meanwhile waits for the loop
			s.done(began, now)
		case i < len(changes):
			now = later(now, base.Add(changes[i]))
			s.change(now)
			i++
		default:
			return commits, held
		}
	}
}

// every is the times from first to last, step apart.
func every(first, last, step time.Duration) []time.Duration {
	var ts []time.Duration
	for t := first; t <= last; t += step {
		ts = append(ts, t)
	}
	return ts
}

const ms = time.Millisecond

func TestCommitSchedule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes []time.Duration
		failAt  []int
		want    []time.Duration
	}{
		{name: "the state loaded, committed at once", want: []time.Duration{0}},
		{
			name:    "a lone record, committed at once",
			changes: []time.Duration{500 * ms},
			want:    []time.Duration{0, 500 * ms},
		},
		{
			name:    "lone records apart, each committed at once",
			changes: []time.Duration{500 * ms, 530 * ms, 900 * ms},
			want:    []time.Duration{0, 500 * ms, 530 * ms, 900 * ms},
		},
		{
			// A change during the commit (in flight 0.5 ms) or less than
			// a gap after it began waits for the gap, with the others.
			name:    "changes batched behind a commit",
			changes: []time.Duration{500 * ms, 500*ms + 500*time.Microsecond, 505 * ms, 519 * ms},
			want:    []time.Duration{0, 500 * ms, 520 * ms},
		},
		{
			// A catch-up: a commit per gap while it lasts, the last one
			// at most a gap after its last change (the change at 1100
			// comes just after the commit then).
			name:    "catch-up",
			changes: every(1000*ms, 1100*ms, 1*ms),
			want:    []time.Duration{0, 1000 * ms, 1020 * ms, 1040 * ms, 1060 * ms, 1080 * ms, 1100 * ms, 1120 * ms},
		},
		{
			name:    "stream of a record every 5 ms: one commit per gap",
			changes: every(5*ms, 100*ms, 5*ms),
			want:    []time.Duration{0, 20 * ms, 40 * ms, 60 * ms, 80 * ms, 100 * ms, 120 * ms},
		},
		{
			// A stream that lasts drains the budget (10 commits, less the
			// time it refilled meanwhile) and is then committed once per
			// 300 ms.
			name:    "stream that lasts: 3 commits a second",
			changes: every(5*ms, 1000*ms, 5*ms),
			want: []time.Duration{0, 20 * ms, 40 * ms, 60 * ms, 80 * ms, 100 * ms, 120 * ms, 140 * ms, 160 * ms, 180 * ms,
				300 * ms, 600 * ms, 900 * ms, 1200 * ms},
		},
		{
			// A failed commit is retried a second later, not sooner,
			// even when changes keep coming meanwhile.
			name:    "failed commit retried a second later",
			changes: []time.Duration{2000 * ms, 2100 * ms},
			failAt:  []int{1},
			want:    []time.Duration{0, 2000 * ms, 3000 * ms},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := simulate(20*ms, 500*time.Microsecond, tc.changes, tc.failAt...)
			if !slices.Equal(got, tc.want) {
				t.Errorf("commits at %v, want %v", got[:min(len(got), 20)], tc.want)
			}
		})
	}
}

// Under any stream and any commit time: a change is committed by the first
// commit that begins after it, and that begins at once, or at most the
// budget's rate (every) after the commit before it began, or its idle time
// (idleAfter) after that one ended if that is later; no two commits begin
// less than a gap, or the first one's length and idle time, apart; and
// over any span there are at most commitBurst commits more than one per
// every.
func TestCommitScheduleBounds(t *testing.T) {
	const gap = 20 * ms
	every := newCommitSchedule(gap).every
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		maxGap := []time.Duration{1 * ms, 5 * ms, 30 * ms, 200 * ms, 3000 * ms}[seed%5]
		took := []time.Duration{100 * time.Microsecond, 1 * ms, 15 * ms, 60 * ms, 300 * ms}[seed%5]
		var changes []time.Duration
		for at := time.Duration(0); at < 20*time.Second; {
			at += time.Duration(rng.Int64N(int64(maxGap))) + 1
			changes = append(changes, at)
		}
		commits, held := simulate(gap, took, changes)
		for k, c := range changes {
			i := slices.IndexFunc(held, func(n int) bool { return n > k })
			if i < 0 {
				t.Fatalf("seed %d: the change at %v is never committed", seed, c)
			}
			prev := commits[i-1]
			if bound := max(prev+every, prev+took+idleAfter(took, every), c); commits[i] > bound {
				t.Fatalf("seed %d: the change at %v is committed at %v, want by %v", seed, c, commits[i], bound)
			}
		}
		for i := 1; i < len(commits); i++ {
			if least := max(gap, took+idleAfter(took, every)); commits[i]-commits[i-1] < least {
				t.Fatalf("seed %d: commits at %v and %v, less than %v apart", seed, commits[i-1], commits[i], least)
			}
			for j := i + 1; j < len(commits); j++ {
				if n := j - i + 1; n > commitBurst+1+int((commits[j]-commits[i])/every) {
					t.Fatalf("seed %d: %d commits from %v to %v", seed, n, commits[i], commits[j])
				}
			}
		}
	}
}

// A commit that takes 5 ms (a catch-up's, copying every job) is followed by
// 100 ms without one, so the saver takes a twenty-first of the time; one
// that takes 50 ms (a slow disk) by 300 ms, no more.
func TestCommitScheduleIdleAfterSlowCommit(t *testing.T) {
	for _, tc := range []struct {
		took time.Duration
		want []time.Duration
	}{
		{5 * ms, []time.Duration{0, 105 * ms, 210 * ms, 315 * ms, 420 * ms, 525 * ms}},
		{50 * ms, []time.Duration{0, 350 * ms, 700 * ms}},
	} {
		got, _ := simulate(20*ms, tc.took, every(1*ms, 500*ms, 1*ms))
		if !slices.Equal(got, tc.want) {
			t.Errorf("commits taking %v at %v, want %v", tc.took, got, tc.want)
		}
	}
}

// The end of a catch-up is committed at once, a gap after the last commit
// began, though a slow commit's idle time runs and the budget is low.
func TestCommitScheduleCaughtUp(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	const gap = 20 * ms
	s := newCommitSchedule(gap)
	now := base
	for range commitBurst + 2 { // a stream of slow commits
		s.change(now)
		at, _ := s.due()
		now = later(now, at)
		s.begin(now)
		began := now
		now = now.Add(10 * ms) // a slow commit: 200 ms idle after it
		s.done(began, now)
	}
	s.change(now)
	if at, _ := s.due(); at.Sub(now) < 100*ms {
		t.Fatalf("a change is due %s after a spent budget and a slow commit, want most of %s", at.Sub(now), streamCommitEvery)
	}
	began := now.Add(-10 * ms)
	s.caughtUp()
	if at, ok := s.due(); !ok || !at.Equal(began.Add(gap)) {
		t.Fatalf("caught up: due %s after the last commit began (%v), want the gap %s", at.Sub(began), ok, gap)
	}
}

// TestCommitScheduleLazy: a change of verdicts alone waits lazyDelay for a
// change to be committed with, and goes with the first that comes; so a
// stream of live records, a fact every 300 ms and each record's verdict
// a late window later, commits every fact at once for a minute, where
// committing each verdict at once too makes facts wait for the budget.
func TestCommitScheduleLazy(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := newCommitSchedule(20 * ms)
	s.changeLazy(base)
	if at, ok := s.due(); !ok || !at.Equal(base.Add(lazyDelay)) {
		t.Fatalf("a lone verdict due at %v (%v), want %v later", at.Sub(base), ok, lazyDelay)
	}
	s.change(base.Add(100 * ms))
	if at, ok := s.due(); !ok || at.After(base.Add(100*ms)) {
		t.Fatalf("a fact after a verdict due at %v, want at once", at.Sub(base))
	}
	s.begin(base.Add(100 * ms))
	if _, ok := s.due(); ok {
		t.Fatal("the commit of the fact left the verdict due")
	}

	// stream returns the longest a fact waited for its commit, over a
	// minute of a fact every 300 ms and a verdict 2 s after each.
	stream := func(lazyVerdicts bool) time.Duration {
		s := newCommitSchedule(20 * ms)
		type change struct {
			at   time.Duration
			fact bool
		}
		var changes []change
		for at := 300 * ms; at <= time.Minute; at += 300 * ms {
			changes = append(changes, change{at, true}, change{at + 2*time.Second + 50*ms, false})
		}
		slices.SortFunc(changes, func(a, b change) int { return int(a.at - b.at) })
		var worst time.Duration
		var waiting []time.Duration // facts not committed yet
		now := base
		for i := 0; i < len(changes) || len(waiting) > 0; {
			at, ok := s.due()
			if ok && (i == len(changes) || !at.After(base.Add(changes[i].at))) {
				now = later(now, at)
				s.begin(now)
				for _, w := range waiting {
					worst = max(worst, now.Sub(base)-w)
				}
				waiting = waiting[:0]
				s.done(now, now.Add(ms)) // a commit takes a millisecond
				continue
			}
			c := changes[i]
			i++
			now = later(now, base.Add(c.at))
			switch {
			case c.fact:
				s.change(now)
				waiting = append(waiting, c.at)
			case lazyVerdicts:
				s.changeLazy(now)
			default:
				s.change(now)
			}
		}
		return worst
	}
	if w := stream(true); w > 20*ms {
		t.Errorf("with verdicts committed lazily a fact waited %v for its commit, want none past the 20 ms gap", w)
	}
	if w := stream(false); w < 100*ms {
		t.Errorf("with every verdict committed at once no fact waited (at most %v): the test does not measure what the lazy commit saves", w)
	}
}
