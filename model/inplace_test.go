package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// inPlaceRecords are the oracle's records with what decides records in
// place must not change: runs that declined to run (an end that says
// skipped, a skip naming its run's id), ends of runs that never started,
// and repeated ends.
func inPlaceRecords(rng *rand.Rand) []Event {
	records := oracleRecords(rng)
	for i := range records {
		ev := records[i]
		switch r := rng.IntN(60); {
		case r == 0 && ev.Kind == End:
			records[i].Result, records[i].ExitCode = Skipped, 0
		case r == 1 && ev.Kind == Start && ev.RunID != "":
			records = append(records, Event{Kind: Skip, Job: ev.Job, Host: ev.Host, RunID: ev.RunID, Time: ev.Time.Add(time.Millisecond), Reason: "locked", SkipLabel: "locked"})
		case r == 2 && ev.Kind == End:
			records = append(records, ev) // a repeated end
		case r == 3 && ev.Kind == Start:
			records = append(records, Event{Kind: End, Job: ev.Job, Host: ev.Host, PID: ev.PID + 100000, Time: ev.Time.Add(time.Second), Result: Success, HasExitCode: true})
		}
	}
	return records
}

// replay hands the records over to tr from k sources in the order rng
// gives: each source reads its records roughly in time order, some of
// them displaced by up to four late windows (late, or out of order within
// a batch), in batches of random size, with the clock and decisions moving
// on between them. Two trackers given the same rng seed see the same
// calls.
func replay(tr *Tracker, apply applier, clock *fakeClock, rng *rand.Rand, records []Event, k int) string {
	queues := make([][]arrival, k)
	for _, ev := range records {
		delay := time.Duration(rng.Int64N(int64(oracleWindow / 2)))
		if rng.IntN(20) == 0 {
			delay = time.Duration(rng.Int64N(int64(4 * oracleWindow)))
		}
		s := rng.IntN(k)
		queues[s] = append(queues[s], arrival{ev.Time.Add(delay), ev})
	}
	for s := range queues {
		slices.SortStableFunc(queues[s], func(a, b arrival) int { return a.at.Compare(b.at) })
	}
	for clock.now.Before(oracleEnd) {
		clock.Advance(time.Duration(1 + rng.Int64N(int64(3*oracleWindow))))
		for _, s := range rng.Perm(k) {
			queues[s] = handOver(apply, fmt.Sprintf("s%d", s), queues[s], clock.now, rng, 200, func(last bool) bool { return last && rng.IntN(2) == 0 })
		}
		decideSometimes(tr, rng)
	}
	for s := range k {
		apply.Apply(Batch{Source: fmt.Sprintf("s%d", s), AtEnd: true})
	}
	return finalVerdicts(tr, clock)
}

// TestDecideInPlaceAsHeld: deciding a batch's records as they are taken,
// where the watermark allows, gives every verdict that holding every
// record until the batch's end gives, on streams with late records,
// records out of order within a batch, runs that declined, and repeats.
func TestDecideInPlaceAsHeld(t *testing.T) {
	rounds := 16
	if testing.Short() {
		rounds = 4
	}
	for seed := range uint64(rounds) {
		for k := 1; k <= 3; k++ {
			records := inPlaceRecords(rand.New(rand.NewPCG(seed, 3)))
			var got [2]string
			for i, holdAll := range []bool{false, true} {
				clock := &fakeClock{now: oracleStart}
				tr := oracleTracker(clock, k)
				var apply applier = tr
				if holdAll {
					apply = holdingApplier{tr}
				}
				got[i] = replay(tr, apply, clock, rand.New(rand.NewPCG(seed, 4)), records, k)
			}
			if got[0] != got[1] {
				t.Fatalf("seed %d over %d sources: deciding in place differs from holding:\n%s", seed, k, firstDiff(got[0], got[1]))
			}
		}
	}
}

// holdingApplier applies batches holding every record until the batch's
// end (Tracker.applyHolding).
type holdingApplier struct{ tr *Tracker }

func (h holdingApplier) Apply(b Batch) { h.tr.applyHolding(b) }
