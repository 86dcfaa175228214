package model

import (
	"testing"
	"time"
)

type testRun struct {
	id    string
	start int
}

func (r testRun) Before(o testRun) bool {
	if r.start != o.start {
		return r.start < o.start
	}
	return r.id < o.id
}

func TestInFlightKeepsTheNewestUpToTheCap(t *testing.T) {
	f := InFlight[string, testRun]{}
	for i := range MaxOpenRuns {
		id := string(rune('a'+i%26)) + time.Duration(i).String()
		if _, evicted := f.Add(id, testRun{id, i + 10}); evicted {
			t.Fatalf("evicted at %d, below the cap", i)
		}
	}
	// Adding a run already there evicts nothing.
	first := f.Sorted()[0]
	if _, evicted := f.Add(first.id, first); evicted {
		t.Fatal("re-adding a present run evicted one")
	}
	// One more lets the oldest go, even when the new one is older still.
	old, evicted := f.Add("new", testRun{"new", 0})
	if !evicted || old != first || len(f) != MaxOpenRuns {
		t.Fatalf("evicted %v %v, len %d; want %v, true, %d", old, evicted, len(f), first, MaxOpenRuns)
	}
	if _, ok := f["new"]; !ok {
		t.Fatal("the new run is not kept")
	}
}

func TestInFlightOrderIsDeterministic(t *testing.T) {
	f := InFlight[string, testRun]{"c": {"c", 1}, "a": {"a", 1}, "b": {"b", 0}, "d": {"d", 2}}
	for range 20 {
		got := f.Sorted()
		if got[0].id != "b" || got[1].id != "a" || got[2].id != "c" || got[3].id != "d" {
			t.Fatalf("order %v", got)
		}
		if k, _, _ := f.Oldest(); k != "b" {
			t.Fatalf("oldest %s", k)
		}
	}
	var empty InFlight[string, testRun]
	if empty.Sorted() != nil || empty.Trim() != 0 {
		t.Fatal("empty")
	}
	if _, _, ok := empty.Oldest(); ok {
		t.Fatal("oldest of none")
	}
}

func TestInFlightTrim(t *testing.T) {
	f := InFlight[int, testRun]{}
	for i := range MaxOpenRuns + 7 {
		f[i] = testRun{start: i}
	}
	if n := f.Trim(); n != 7 || len(f) != MaxOpenRuns {
		t.Fatalf("trimmed %d, left %d", n, len(f))
	}
	for i := range 7 {
		if _, ok := f[i]; ok {
			t.Fatalf("run %d, among the oldest, kept", i)
		}
	}
}
