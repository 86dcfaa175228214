package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"
)

func TestRecentAndDurationHistoryBounded(t *testing.T) {
	clock := &fakeClock{now: at(0)}
	tr := newTestTracker(clock, nil)
	var evs []Event
	for i := range 130 {
		s := at(time.Duration(i) * time.Hour)
		evs = append(evs, start("stats", "web1", 1000+i, s), end("stats", "web1", 1000+i, s.Add(time.Duration(i+1)*time.Second), Success))
	}
	evs = append(evs, skip("stats", at(200*time.Hour)))
	clock.now = at(300 * time.Hour)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: evs})
	view := jobView(t, tr, "stats")
	before := struct {
		Recent          []RecentRun
		DurationHistory []float64
	}{view.RecentRuns(), view.LastDurations()}
	if len(before.Recent) != MaxRecentRuns || before.Recent[len(before.Recent)-1].Result() != Skipped {
		t.Fatalf("%d recent runs, last %+v", len(before.Recent), before.Recent[len(before.Recent)-1])
	}
	if r := before.Recent[len(before.Recent)-2].Fields(); r.Duration != 130*time.Second || r.PID != 1129 || !r.HasDuration || r.Start != at(129*time.Hour) {
		t.Errorf("newest finished run %+v", r)
	}
	if h := before.DurationHistory; len(h) != MaxDurationHistory || h[0] != 31 || h[len(h)-1] != 130 {
		t.Errorf("duration history: %d values from %v to %v", len(h), h[0], h[len(h)-1])
	}
	if p, _ := DurationQuantile(before.DurationHistory, 0.99); p != 129 {
		t.Errorf("P99 %v, want 129", p)
	}
	if p, _ := DurationQuantile(before.DurationHistory, 0.5); p != 80 {
		t.Errorf("P50 %v, want 80", p)
	}
	if _, ok := DurationQuantile(nil, 0.99); ok {
		t.Error("a quantile of nothing")
	}
	// A view taken before keeps what it saw while the model goes on.
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{start("stats", "web1", 1, at(301*time.Hour)), end("stats", "web1", 1, at(301*time.Hour+time.Second), Failure)}})
	if before.Recent[len(before.Recent)-1].Result() != Skipped || before.DurationHistory[len(before.DurationHistory)-1] != 130 {
		t.Error("a later run changed an earlier view")
	}
}

// Applying a run writes one element whatever the history (copying the
// job's whole history on every run made ingest several times slower); a
// view copies the ring out in order.
func TestRing(t *testing.T) {
	var r ring[int]
	if r.ordered() != nil {
		t.Fatal("an empty ring has values")
	}
	for i := range 1000 {
		r.push(i, MaxRecentRuns)
		got := r.ordered()
		if len(got) != min(i+1, MaxRecentRuns) || got[len(got)-1] != i || got[0] != max(i+1-MaxRecentRuns, 0) {
			t.Fatalf("after %d pushes: %v", i+1, got)
		}
		if len(r.buf) > MaxRecentRuns {
			t.Fatalf("%d held", len(r.buf))
		}
	}
	view := r.ordered()
	r.push(1000, MaxRecentRuns)
	if view[len(view)-1] != 999 {
		t.Error("a push changed a copy taken before")
	}
	r.load([]int{1, 2, 3}, 2)
	if got := r.ordered(); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("loaded %v", got)
	}
}

// Views share the ring's values until it is full; a view taken at any
// point keeps its values however many pushes follow.
func TestRingViewsKeepTheirValues(t *testing.T) {
	const n = 5
	var r ring[int]
	var views [][]int
	for i := range 4 * n {
		r.push(i, n)
		views = append(views, r.ordered())
	}
	for i, v := range views {
		if len(v) != min(i+1, n) {
			t.Fatalf("view %d: %v", i, v)
		}
		for k, x := range v {
			if want := i + 1 - len(v) + k; x != want {
				t.Errorf("view %d changed: %v", i, v)
				break
			}
		}
	}
}

// A RecentRun gives back every field it was made of, in its zone (the state
// file writes a time's offset), whatever does not fit its small fields
// included.
func TestRecentRunFields(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	parsed, err := time.Parse(time.RFC3339Nano, "2026-11-30T10:00:00.123456789+05:30")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 9, 0, 0, 7, time.UTC)
	for _, f := range []RecentRunFields{
		{},
		{End: at, Result: Success, Host: "web1", PID: 42, HasExitCode: true},
		{Start: at.Add(-time.Minute), End: at, Duration: time.Minute, HasDuration: true, Result: Failure, Host: "web1", PID: 1, ExitCode: -3, HasExitCode: true, Overlapped: true},
		{End: at, Result: Skipped, Reason: "locked", Lock: "redis", Holder: "web2:77"},
		{End: at, Result: Success, Output: "done"},
		{Start: at.In(time.Local), End: at.In(berlin), Result: Timeout},
		{Start: parsed, End: parsed.Add(time.Second), Result: Lost},
		{Start: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(3000, 1, 1, 0, 0, 0, 1, berlin), Result: Success},
		{End: at, Result: "exotic", PID: 1 << 40, ExitCode: -1 << 35, HasExitCode: true},
		{End: time.Unix(0, 0).UTC(), Result: Success},
	} {
		got := NewRecentRun(f).Fields()
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", f) {
			t.Errorf("made of %+v\ngives   %+v", f, got)
		}
		if got.Result != NewRecentRun(f).Result() {
			t.Errorf("Result() %q, Fields().Result %q", NewRecentRun(f).Result(), got.Result)
		}
	}
	if s := unsafe.Sizeof(RecentRun{}); s > 64 {
		t.Errorf("a RecentRun is %d bytes", s)
	}
}

// DurationQuantile's selection gives the nearest-rank quantile a sort
// gives, for lengths, repeats and orders of every kind.
func TestDurationQuantileMatchesSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= MaxDurationHistory+3; n++ {
		for range 20 {
			d := make([]float64, n)
			for i := range d {
				switch rng.IntN(3) {
				case 0:
					d[i] = float64(rng.IntN(4)) // repeats
				default:
					d[i] = rng.Float64() * 1000
				}
			}
			if rng.IntN(4) == 0 {
				slices.Sort(d)
			}
			orig := slices.Clone(d)
			sorted := slices.Sorted(slices.Values(d))
			for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 1} {
				i := min(max(int(math.Ceil(q*float64(n)))-1, 0), n-1)
				if got, ok := DurationQuantile(d, q); !ok || got != sorted[i] {
					t.Fatalf("n %d q %v: got %v, want %v (of %v)", n, q, got, sorted[i], orig)
				}
			}
			if !slices.Equal(d, orig) {
				t.Fatalf("the durations were reordered")
			}
		}
	}
	if _, ok := DurationQuantile(nil, 0.99); ok {
		t.Error("a quantile of no durations")
	}
}

func BenchmarkDurationQuantile(b *testing.B) {
	d := make([]float64, MaxDurationHistory)
	for i := range d {
		d[i] = float64((i * 37) % 101)
	}
	b.ReportAllocs()
	for b.Loop() {
		DurationQuantile(d, 0.99)
	}
}
