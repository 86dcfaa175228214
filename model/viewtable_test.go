package model

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

func TestViewTable(t *testing.T) {
	views := map[string]*JobView{}
	for i := range 1000 {
		views[fmt.Sprintf("job_%d", i)] = &JobView{}
	}
	a := newViewTable(views)
	b := a.with([]string{"job_1", "job_2", "absent"}, map[string]*JobView{"job_3": {}, "new": {}})
	if a.len() != 1000 || b.len() != 999 {
		t.Fatalf("len: a %d, b %d, want 1000 and 999", a.len(), b.len())
	}
	if a.get("job_1") != views["job_1"] || a.get("new") != nil || a.get("job_3") != views["job_3"] {
		t.Error("with changed the table it was made from")
	}
	if b.get("job_1") != nil || b.get("job_2") != nil || b.get("new") == nil || b.get("job_3") == views["job_3"] || b.get("job_4") != views["job_4"] {
		t.Error("with did not apply the change")
	}
	want := slices.Sorted(maps.Keys(views))
	want = slices.DeleteFunc(want, func(n string) bool { return n == "job_1" || n == "job_2" })
	want = append(want, "new")
	slices.Sort(want)
	if got := slices.Sorted(b.names); !slices.Equal(got, want) {
		t.Errorf("names: %d names, want %d", len(got), len(want))
	}
	var none *viewTable
	if none.get("x") != nil || none.len() != 0 {
		t.Error("a nil table is not empty")
	}
}

// BenchmarkSavedWith is a commit of 33 changed jobs of 10,000 (a stream of
// 200 records a second, 3 commits a second).
func BenchmarkSavedWith(b *testing.B) {
	all := map[string]*JobView{}
	for i := range 10000 {
		all[fmt.Sprintf("job_%05d", i)] = &JobView{}
	}
	s := (*Saved)(nil).With(&Changes{Full: true, Jobs: all})
	changes := make([]*Changes, 300)
	for i := range changes {
		c := &Changes{Jobs: map[string]*JobView{}}
		for k := range 33 {
			c.Jobs[fmt.Sprintf("job_%05d", (i*33+k)%10000)] = &JobView{}
		}
		changes[i] = c
	}
	i := 0
	for b.Loop() {
		s = s.With(changes[i%len(changes)])
		i++
	}
}

// A catch-up that held many jobs leaves no large set behind for the walks
// of every DecideHeld and every batch at a source's end.
func TestHoldingShrinksAfterPeak(t *testing.T) {
	clock := &fakeClock{now: t0}
	tr := New(Options{Host: "here", StartupHold: NoStartupHold, Now: clock.Now})
	specs := make([]JobSpec, 1000)
	evs := make([]Event, len(specs))
	for i := range specs {
		specs[i] = JobSpec{Name: fmt.Sprintf("job_%d", i), StaleMultiple: 2}
		evs[i] = start(specs[i].Name, "web1", 1000+i, clock.now)
	}
	tr.Configure(specs, []SourceSpec{{Name: "runs", Type: "runlog", Runs: true, LateWindow: 2 * time.Second}})
	tr.Apply(Batch{Source: "runs", Events: evs, AtEnd: true})
	tr.DecideHeld()
	if len(tr.order.holding) != len(specs) {
		t.Fatalf("%d jobs holding records, want %d", len(tr.order.holding), len(specs))
	}
	clock.Advance(3 * time.Second)
	tr.DecideHeld()
	if len(tr.order.holding) != 0 || tr.order.holdingPeak != 0 {
		t.Errorf("after the records were decided: %d jobs holding, peak %d; want the set rebuilt empty", len(tr.order.holding), tr.order.holdingPeak)
	}
}
