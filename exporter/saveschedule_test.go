package exporter

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// simulate runs a saveSchedule as Run does, on a stepped clock: the state
// loaded at 0, then a change at each of changes (ascending), a save whenever
// one is due (before a change due at the same instant). It returns when the
// saves began and how many of changes each one holds; failAt lists saves (by
// number) that fail.
func simulate(interval time.Duration, changes []time.Duration, failAt ...int) (saves []time.Duration, held []int) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := newSaveSchedule(interval)
	now := base
	s.change(now)
	for i := 0; ; {
		at, ok := s.due()
		switch {
		case ok && (i == len(changes) || !at.After(base.Add(changes[i]))):
			if at.After(now) { // else a deadline passed (the zero time: at once)
				now = at
			}
			s.begin(now)
			if slices.Contains(failAt, len(saves)) {
				s.failed(now)
				held = append(held, 0)
			} else {
				held = append(held, i)
			}
			saves = append(saves, now.Sub(base))
		case i < len(changes):
			now = base.Add(changes[i])
			s.change(now)
			i++
		default:
			return saves, held
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

func TestSaveSchedule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changes []time.Duration
		failAt  []int
		want    []time.Duration
	}{
		{name: "the state loaded, saved at once", want: []time.Duration{0}},
		{
			// The end of a catch-up shows settle (50 ms) after its last
			// record, not one SaveInterval after the save before.
			name:    "catch-up started by the first change",
			changes: every(1*ms, 440*ms, 1*ms),
			want:    []time.Duration{0, 490 * ms},
		},
		{
			name:    "catch-up after a quiet spell",
			changes: every(3000*ms, 3440*ms, 1*ms),
			want:    []time.Duration{0, 3000 * ms, 3490 * ms},
		},
		{
			// Under load a source's batches come 60 ms apart: the settle
			// time grows to 4 gaps, and the catch-up is saved once, at its
			// end, not in part 50 ms into it.
			name:    "catch-up in spaced batches",
			changes: every(3000*ms, 3480*ms, 60*ms),
			want:    []time.Duration{0, 3000 * ms, 3720 * ms},
		},
		{
			// Changes closer than settle: once per SaveInterval, and the
			// last ones settle after the stream ends.
			name:    "steady stream",
			changes: every(10*ms, 4500*ms, 10*ms),
			want:    []time.Duration{0, 1000 * ms, 2000 * ms, 3000 * ms, 4000 * ms, 4550 * ms},
		},
		{
			// Gaps of 200 ms never last the settle time (a quarter
			// SaveInterval at most): once per SaveInterval.
			name:    "stream of a record every 200 ms",
			changes: every(200*ms, 2800*ms, 200*ms),
			want:    []time.Duration{0, 1000 * ms, 2000 * ms, 3000 * ms},
		},
		{
			// Gaps of 400 ms do: one early save between two regular ones,
			// the slot after an early save a whole SaveInterval later.
			name:    "stream of a record every 400 ms",
			changes: every(400*ms, 4000*ms, 400*ms),
			want:    []time.Duration{0, 650 * ms, 1650 * ms, 2250 * ms, 3250 * ms, 3850 * ms, 4850 * ms},
		},
		{
			// A failed save is retried a SaveInterval later, not sooner,
			// even when changes settle meanwhile.
			name:    "failed save retried a SaveInterval later",
			changes: []time.Duration{2000 * ms},
			failAt:  []int{1},
			want:    []time.Duration{0, 2000 * ms, 3000 * ms},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := simulate(time.Second, tc.changes, tc.failAt...)
			if !slices.Equal(got, tc.want) {
				t.Errorf("saves at %v, want %v", got[:min(len(got), 20)], tc.want)
			}
		})
	}
}

// Under any stream: every change is saved within a SaveInterval, there are
// never more than two saves in a SaveInterval, and a save comes sooner than
// a SaveInterval after the one before only once changes have settled.
func TestSaveScheduleBounds(t *testing.T) {
	const interval = time.Second
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		maxGap := []time.Duration{5 * ms, 40 * ms, 120 * ms, 700 * ms, 3000 * ms}[seed%5]
		var changes []time.Duration
		for at := time.Duration(0); at < 20*time.Second; {
			at += time.Duration(rng.Int64N(int64(maxGap))) + 1
			changes = append(changes, at)
		}
		saves, held := simulate(interval, changes)
		for k, c := range changes {
			i := slices.IndexFunc(held, func(n int) bool { return n > k })
			if i < 0 || saves[i]-c > interval {
				t.Fatalf("seed %d: the change at %v is not saved within %v (saves %v)", seed, c, interval, saves)
			}
		}
		for i := 2; i < len(saves); i++ {
			if saves[i]-saves[i-2] < interval {
				t.Fatalf("seed %d: 3 saves within %v: %v", seed, interval, saves[i-2:i+1])
			}
		}
		for i := 1; i < len(saves); i++ {
			if saves[i]-saves[i-1] >= interval {
				continue
			}
			j, _ := slices.BinarySearch(changes, saves[i])
			if j == 0 || saves[i]-changes[j-1] < minSettle {
				t.Fatalf("seed %d: save at %v, %v after the one before, without changes settled for %v", seed, saves[i], saves[i]-saves[i-1], minSettle)
			}
		}
	}
}
