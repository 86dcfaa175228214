package model

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// The oracle of event time: the same records, handed over by one to four
// sources in any interleaving (a run's start in one source and its end in
// another, records late within their source's window, backlogs of very
// different sizes, a source down for a while), give exactly what the one
// time-ordered stream gives.

const (
	oracleWindow = 5 * time.Second
	oracleSlots  = 240 // four hours of a minutely job
)

var oracleStart = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func oracleJobs() []JobSpec {
	minutely := grid{time.Minute}
	return []JobSpec{
		{Name: "host", Schedule: minutely, Grace: 20 * time.Second, Timeout: 4 * time.Minute, Scope: "host", StaleMultiple: 2},
		{Name: "cluster", Schedule: minutely, Grace: 20 * time.Second, Scope: "cluster", StaleMultiple: 2},
		{Name: "every", Schedule: schedule.Every(time.Minute), StaleMultiple: 2},
	}
}

// oracleRecords are a few hours of runs of each job: on time, missed,
// skipped, overlapping, triggered twice, on two hosts, lost (no end: closed
// at the timeout), with and without durations and run ids.
func oracleRecords(rng *rand.Rand) []Event {
	var out []Event
	id := 0
	for _, job := range []string{"host", "cluster", "every"} {
		for slot := range oracleSlots {
			at := oracleStart.Add(time.Duration(slot+1) * time.Minute)
			runs := 1
			switch r := rng.IntN(100); {
			case r < 8:
				continue // missed
			case r < 16:
				ev := Event{Kind: Skip, Job: job, Host: "a", Time: at.Add(time.Duration(rng.IntN(15000)) * time.Millisecond), Reason: "locked", SkipLabel: "locked"}
				out = append(out, ev)
				continue
			case r < 22:
				runs = 2
			}
			for n := range runs {
				id++
				host := "a"
				if job != "every" && rng.IntN(4) == 0 {
					host = "b"
				}
				start := at.Add(time.Duration(rng.IntN(15000)+n*500) * time.Millisecond)
				if rng.IntN(30) == 0 {
					start = at.Add(30 * time.Second) // past grace: unexpected
				}
				dur := time.Duration(1+rng.IntN(30)) * time.Second
				if rng.IntN(10) == 0 {
					dur = time.Duration(70+rng.IntN(100)) * time.Second // into the next slots
				}
				runID := ""
				pid := 1000 + id
				if rng.IntN(2) == 0 {
					runID, pid = fmt.Sprintf("r%d", id), 0
				}
				out = append(out, Event{Kind: Start, Job: job, Host: host, PID: pid, RunID: runID, Time: start})
				if rng.IntN(40) == 0 {
					continue // never ends
				}
				end := Event{Kind: End, Job: job, Host: host, PID: pid, RunID: runID, Time: start.Add(dur), Result: Success, ExitCode: 0, HasExitCode: true}
				if rng.IntN(5) == 0 {
					end.Result, end.ExitCode = Failure, 1
				}
				if rng.IntN(2) == 0 {
					end.Duration, end.HasDuration = dur, true
				}
				out = append(out, end)
			}
		}
	}
	return out
}

func oracleTracker(clock *fakeClock, sources int) *Tracker {
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	var specs []SourceSpec
	for i := range sources {
		specs = append(specs, SourceSpec{Name: fmt.Sprintf("s%d", i), Type: "runlog", Runs: true, LateWindow: oracleWindow})
	}
	tr.Configure(oracleJobs(), specs)
	return tr
}

// oracleEnd is after every record, its timeout and its slot's grace.
var oracleEnd = oracleStart.Add((oracleSlots + 30) * time.Minute)

// singleStream is the reference: every record, in time order, read by one
// source as a backlog, then the clock past the end.
func singleStream(records []Event) string {
	clock := &fakeClock{now: oracleStart}
	tr := oracleTracker(clock, 1)
	sorted := slices.Clone(records)
	slices.SortStableFunc(sorted, func(a, b Event) int { return a.Time.Compare(b.Time) })
	clock.now = oracleEnd
	for len(sorted) > 0 {
		n := min(len(sorted), 100)
		tr.Apply(Batch{Source: "s0", Events: sorted[:n]})
		sorted = sorted[n:]
	}
	tr.Apply(Batch{Source: "s0", AtEnd: true})
	return finalVerdicts(tr, clock)
}

// interleaved hands the records over live: each to one of k sources, read
// within the window after its time; one source may be down for a while and
// then catch up; the clock moves in random steps with reaps in between.
func interleaved(rng *rand.Rand, records []Event, k int) string {
	clock := &fakeClock{now: oracleStart}
	tr := oracleTracker(clock, k)
	queues := make([][]arrival, k)
	for _, ev := range records {
		s := rng.IntN(k)
		// Readable up to half the window after its time; the clock's steps
		// take up the other half (a source hands over what it can read
		// within a step, as a tailer does within its wake-up).
		queues[s] = append(queues[s], arrival{ev.Time.Add(time.Duration(rng.Int64N(int64(oracleWindow / 2)))), ev})
	}
	for s := range queues {
		slices.SortStableFunc(queues[s], func(a, b arrival) int { return a.at.Compare(b.at) })
	}
	// One source is down from downFrom to downTo (in one run of three),
	// after it has reported every job (the jobs a source holds back are
	// those it has reported: one it never did is decided without it).
	down := rng.IntN(3*k) % (k + 2)
	downFrom := oracleStart.Add(time.Duration(30+rng.IntN(oracleSlots-30)) * time.Minute)
	downTo := downFrom.Add(time.Duration(rng.IntN(90)) * time.Minute)
	downSeen := false
	shown := map[string]shownFacts{}
	for clock.now.Before(oracleEnd) {
		clock.Advance(time.Duration(1 + rng.Int64N(int64(oracleWindow/2))))
		for _, s := range rng.Perm(k) {
			name := fmt.Sprintf("s%d", s)
			// Down (once it has read what came before: its failure is seen
			// at once), it hands over nothing until it is back.
			isDown := s == down && !clock.now.Before(downFrom) && clock.now.Before(downTo)
			if isDown && downSeen {
				continue
			}
			tr.SetHealth(name, true, nil)
			// Caught up in batches of random size, at its end after the last.
			queues[s] = handOver(tr, name, queues[s], clock.now, rng, 50, func(last bool) bool { return last })
			tr.Apply(Batch{Source: name, AtEnd: true})
			if isDown {
				tr.SetHealth(name, false, nil)
				downSeen = true
			}
		}
		decideSometimes(tr, rng)
		factsNeverGoBack(tr, shown)
	}
	for s := range k {
		name := fmt.Sprintf("s%d", s)
		tr.SetHealth(name, true, nil)
		var evs []Event
		for _, a := range queues[s] {
			evs = append(evs, a.ev)
		}
		tr.Apply(Batch{Source: name, Events: evs, AtEnd: true})
	}
	out := finalVerdicts(tr, clock)
	factsNeverGoBack(tr, shown) // the decided figures: none shown was more
	return out
}

// decideSometimes reaps, decides what is held, or neither, as rng says.
// It decides what is held as the exporter does, only from a signal of Held
// until DecideHeld reports nothing held, and panics if records are held
// with no such signal standing: they would wait for the next reap.
func decideSometimes(tr *Tracker, rng *rand.Rand) {
	switch rng.IntN(4) {
	case 0:
		tr.Reap()
	case 1:
		signalled(tr.Held()) // taken, as the exporter takes it
		if tr.order.heldSignalled {
			tr.DecideHeld()
		}
	}
	if holdsRecords(tr) && !tr.order.heldSignalled {
		panic("records are held and Held was not signalled: nothing decides them before the next reap")
	}
}

// holdsRecords reports whether a job of tr holds records.
func holdsRecords(tr *Tracker) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, j := range tr.order.jobs {
		if len(j.held.list) > 0 {
			return true
		}
	}
	return false
}

// TestHeldSignalsOnlyWhileRecordsWait: Held is signalled when a batch
// leaves records waiting for a watermark (their sources' late window),
// DecideHeld reports them held until every watermark has passed them, and
// a stream of records older than that, decided as they are read, never
// signals it.
func TestHeldSignalsOnlyWhileRecordsWait(t *testing.T) {
	clock := &fakeClock{now: oracleStart.Add(time.Hour)}
	pid := 0
	run := func(age time.Duration) []Event {
		pid++
		at := clock.now.Add(-age)
		return []Event{
			{Kind: Start, Job: "host", Host: "a", PID: pid, Time: at.Add(-10 * time.Millisecond)},
			{Kind: End, Job: "host", Host: "a", PID: pid, Time: at, Result: Success, HasExitCode: true},
		}
	}
	for k := 1; k <= 2; k++ {
		tr := oracleTracker(clock, k)
		for i := range k {
			tr.Apply(Batch{Source: fmt.Sprintf("s%d", i), AtEnd: true}) // read to its end once
		}
		for i := range 20 {
			tr.Apply(Batch{Source: fmt.Sprintf("s%d", i%k), AtEnd: true, Events: run(2 * oracleWindow)})
			clock.Advance(time.Second)
			if signalled(tr.Held()) {
				t.Fatalf("%d sources, batch %d: records older than the late window are decided as read, yet Held was signalled", k, i)
			}
		}
		if tr.DecideHeld() {
			t.Fatalf("%d sources: DecideHeld reports records held, and none is", k)
		}

		tr.Apply(Batch{Source: "s0", AtEnd: true, Events: run(time.Second)})
		if !signalled(tr.Held()) {
			t.Fatalf("%d sources: a record waits for the watermarks and Held was not signalled", k)
		}
		clock.Advance(oracleWindow / 2)
		if !tr.DecideHeld() {
			t.Fatalf("%d sources: DecideHeld reports nothing held while a record waits for the watermarks", k)
		}
		if signalled(tr.Held()) {
			t.Fatalf("%d sources: Held signalled again while the same records wait", k)
		}
		clock.Advance(oracleWindow)
		if tr.DecideHeld() {
			t.Fatalf("%d sources: DecideHeld reports records held after every watermark passed them", k)
		}
		if jobs, _ := tr.View(); len(jobs[0].Pending) != 0 {
			t.Fatalf("%d sources: DecideHeld reports nothing held, and %d records are", k, len(jobs[0].Pending))
		}
		tr.Apply(Batch{Source: fmt.Sprintf("s%d", k-1), AtEnd: true, Events: run(time.Second)})
		if !signalled(tr.Held()) {
			t.Fatalf("%d sources: records wait again after DecideHeld reported none, and Held was not signalled", k)
		}
	}
}

// finalVerdicts are the verdicts an hour after the last record, reaped.
func finalVerdicts(tr *Tracker, clock *fakeClock) string {
	clock.now = oracleEnd.Add(time.Hour)
	tr.Reap()
	return verdicts(tr)
}

// arrival is a record and when its source can read it.
type arrival struct {
	at time.Time
	ev Event
}

// applier takes batches: a Tracker, or a reference Apply of the tests
// (export_test.go).
type applier interface{ Apply(b Batch) }

// handOver applies the records of q readable by now, in batches of random
// size up to maxBatch, each saying AtEnd as atEnd says (last: nothing
// readable is left); it returns what is left of q.
func handOver(tr applier, name string, q []arrival, now time.Time, rng *rand.Rand, maxBatch int, atEnd func(last bool) bool) []arrival {
	n := 0
	for n < len(q) && !q[n].at.After(now) {
		n++
	}
	for n > 0 {
		m := min(n, 1+rng.IntN(maxBatch))
		evs := make([]Event, m)
		for i := range m {
			evs[i] = q[i].ev
		}
		q, n = q[m:], n-m
		tr.Apply(Batch{Source: name, Events: evs, AtEnd: atEnd(n == 0)})
	}
	return q
}

// verdicts are every job's counters, times, runs in progress and recent
// runs: what the jobwatch_job_* series are rendered from. Which source
// reported a job or started a run is left out: that is all that may differ.
func verdicts(tr *Tracker) string {
	jobs, srcs := tr.View()
	type verdict struct {
		Name    string
		State   JobState
		Recent  []RecentRunFields
		Open    []Run
		Pending int
		Decided time.Time
	}
	var out []verdict
	for _, j := range jobs {
		v := verdict{Name: j.Spec.Name, State: *j.JobState, Pending: len(j.Pending), Decided: j.DecidedUntil}
		v.State.Sources = nil
		for _, r := range j.Recent {
			v.Recent = append(v.Recent, r.Fields())
		}
		for _, r := range j.Open {
			r.Source = ""
			v.Open = append(v.Open, r)
		}
		out = append(out, v)
	}
	var late uint64
	for _, s := range srcs {
		late += s.LateRecords
	}
	b, err := json.MarshalIndent(struct {
		Jobs []verdict
		Late uint64
	}{out, late}, "", " ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

func checkInterleaving(t *testing.T, seed uint64, k int) {
	t.Helper()
	records := oracleRecords(rand.New(rand.NewPCG(seed, 1)))
	want := singleStream(records)
	got := interleaved(rand.New(rand.NewPCG(seed, 2)), records, k)
	if got != want {
		t.Fatalf("seed %d over %d sources: verdicts differ from the one time-ordered stream:\n%s", seed, k, firstDiff(got, want))
	}
}

// firstDiff shows where two verdicts part.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-600)
	return fmt.Sprintf("got  ...%s\nwant ...%s", got[from:min(len(got), i+300)], want[from:min(len(want), i+300)])
}

// TestReapPassesOverQuietJobs: reaps that pass over the jobs with nothing
// due give, after every step, what reaps visiting every job give: the same
// records handed over to both (some after their source's window: late),
// sources going down and up, the clock in steps of up to a minute.
func TestReapPassesOverQuietJobs(t *testing.T) {
	seeds := uint64(6)
	if testing.Short() {
		seeds = 2
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 3))
		k := 1 + int(seed%3)
		clock := &fakeClock{now: oracleStart}
		lazy, all := oracleTracker(clock, k), oracleTracker(clock, k)
		passedOver := 0
		queues := make([][]arrival, k)
		// Each job's records from one source (a job two sources report is
		// visited every reap), a few from any.
		source := map[string]int{"host": 0, "cluster": 1 % k, "every": 2 % k}
		for _, ev := range oracleRecords(rand.New(rand.NewPCG(seed, 1))) {
			s := source[ev.Job]
			if seed%2 == 1 && rng.IntN(50) == 0 {
				s = rng.IntN(k)
			}
			queues[s] = append(queues[s], arrival{ev.Time.Add(time.Duration(rng.Int64N(int64(3 * oracleWindow)))), ev})
		}
		for s := range queues {
			slices.SortStableFunc(queues[s], func(a, b arrival) int { return a.at.Compare(b.at) })
		}
		for step := 0; clock.now.Before(oracleEnd); step++ {
			clock.Advance(time.Duration(1 + rng.Int64N(int64(time.Minute))))
			for _, s := range rng.Perm(k) {
				name := fmt.Sprintf("s%d", s)
				up := rng.IntN(20) != 0
				var evs []Event
				for up && len(queues[s]) > 0 && !queues[s][0].at.After(clock.now) {
					evs, queues[s] = append(evs, queues[s][0].ev), queues[s][1:]
				}
				for _, tr := range []*Tracker{lazy, all} {
					tr.SetHealth(name, up, nil)
					if up {
						tr.Apply(Batch{Source: name, Events: slices.Clone(evs), AtEnd: true})
					}
				}
			}
			if rng.IntN(3) != 0 {
				passedOver += lazy.passable()
				lazy.Reap()
				all.reapEvery()
			} else {
				lazy.DecideHeld()
				all.DecideHeld()
			}
			if got, want := verdicts(lazy), verdicts(all); got != want {
				t.Fatalf("seed %d over %d sources, step %d (%s): passing over quiet jobs gives other verdicts than visiting all:\n%s", seed, k, step, clock.now.Format(time.TimeOnly), firstDiff(got, want))
			}
		}
		if passedOver == 0 {
			t.Errorf("seed %d: no reap passed over a job: nothing was compared", seed)
		}
		if _, srcs := lazy.View(); lateRecords(srcs) == 0 {
			t.Errorf("seed %d: no record came late: lateness was not compared", seed)
		}
	}
}

func lateRecords(srcs []SourceView) (n uint64) {
	for _, s := range srcs {
		n += s.LateRecords
	}
	return n
}

func TestEventTimeOracle(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	for seed := range uint64(rounds) {
		for k := 1; k <= 4; k++ {
			checkInterleaving(t, seed, k)
		}
	}
}

func FuzzEventTimeInterleavings(f *testing.F) {
	f.Add(uint64(1), uint8(2))
	f.Add(uint64(7), uint8(4))
	f.Fuzz(func(t *testing.T, seed uint64, sources uint8) {
		checkInterleaving(t, seed, 1+int(sources%4))
	})
}

// The cases of issue 23, each through two sources, against one stream.
func TestEventTimeCases(t *testing.T) {
	min := func(m int, s int) time.Time {
		return oracleStart.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
	}
	run := func(m int, pid int) []Event {
		return []Event{
			{Kind: Start, Job: "host", Host: "a", PID: pid, Time: min(m, 2)},
			{Kind: End, Job: "host", Host: "a", PID: pid, Time: min(m, 12), Result: Success, HasExitCode: true},
		}
	}
	// Two sources, started with the start-up hold; pastHold ends it.
	held := func(clock *fakeClock) *Tracker {
		tr := New(Options{Host: "here", Now: clock.Now, Alive: func(int) bool { return true }})
		tr.Configure(oracleJobs(), []SourceSpec{{Name: "s0", Runs: true, LateWindow: oracleWindow}, {Name: "s1", Runs: true, LateWindow: oracleWindow}})
		return tr
	}
	t.Run("a skip for an earlier slot after later runs", func(t *testing.T) {
		clock := &fakeClock{now: min(10, 0)}
		tr := held(clock)
		tr.Apply(Batch{Source: "s0", AtEnd: true, Events: slices.Concat(run(1, 1), run(3, 3))})
		clock.Advance(3 * time.Second)
		tr.Apply(Batch{Source: "s1", AtEnd: true, Events: []Event{{Kind: Skip, Job: "host", Host: "a", Time: min(2, 5), SkipLabel: "locked"}}})
		clock.Advance(time.Minute)
		tr.Reap()
		if j := jobView(t, tr, "host"); j.Missed != 7 || j.Skips != 1 { // 4 to 10 had nothing
			t.Fatalf("missed %d skips %d, want 7 and 1", j.Missed, j.Skips)
		}
	})
	t.Run("a run's start in one source, its end in the other, read first", func(t *testing.T) {
		clock := &fakeClock{now: min(10, 0)}
		tr := held(clock)
		var starts, ends []Event
		for m := 1; m <= 5; m++ {
			r := run(m, m)
			starts, ends = append(starts, r[0]), append(ends, r[1])
		}
		tr.Apply(Batch{Source: "s1", AtEnd: true, Events: ends})
		clock.Advance(2 * time.Second)
		tr.Apply(Batch{Source: "s0", AtEnd: true, Events: starts})
		clock.Advance(10 * time.Second)
		tr.Reap()
		j := jobView(t, tr, "host")
		if j.Overlaps != 0 || len(j.Open) != 0 || j.RunCounts[0] != 5 || j.Durations.Count != 5 {
			t.Fatalf("overlaps %d running %d successes %d durations %d; want 0 0 5 5", j.Overlaps, len(j.Open), j.RunCounts[0], j.Durations.Count)
		}
	})
	t.Run("a late start, its end in the next batch", func(t *testing.T) {
		// Read again after a restart whose saves had failed: the start of
		// a run past its timeout comes late, alone at the end of what the
		// log holds, and its end a moment later.
		clock := &fakeClock{now: min(30, 0)}
		tr := held(clock)
		tr.Apply(Batch{Source: "s0", AtEnd: true, Events: run(20, 20)})
		tr.Apply(Batch{Source: "s1", AtEnd: true})
		clock.Advance(15 * time.Second)
		tr.Reap() // the hold is over: decided to about now
		r := run(5, 5)
		tr.Apply(Batch{Source: "s0", AtEnd: true, Events: r[:1]})
		clock.Advance(500 * time.Millisecond)
		tr.DecideHeld()
		tr.Reap()
		tr.Apply(Batch{Source: "s0", AtEnd: true, Events: r[1:]})
		clock.Advance(10 * time.Second)
		tr.Reap()
		j := jobView(t, tr, "host")
		if j.RunCounts[0] != 2 || j.RunCounts[3] != 0 || len(j.Open) != 0 {
			t.Fatalf("successes %d lost %d running %d; want 2 0 0", j.RunCounts[0], j.RunCounts[3], len(j.Open))
		}
		// A late start whose end never comes is lost once its source's
		// late window has passed.
		tr.Apply(Batch{Source: "s0", AtEnd: true, Events: run(6, 6)[:1]})
		clock.Advance(10 * time.Second)
		tr.Reap()
		if j := jobView(t, tr, "host"); j.RunCounts[3] != 1 || len(j.Open) != 0 {
			t.Fatalf("lost %d running %d; want 1 0", j.RunCounts[3], len(j.Open))
		}
	})
	t.Run("a source behind the other at start", func(t *testing.T) {
		clock := &fakeClock{now: min(10, 0)}
		tr := held(clock)
		var recent []Event
		for m := 1; m <= 9; m++ {
			recent = append(recent, run(m, m)...)
		}
		tr.Apply(Batch{Source: "s0", AtEnd: true, Events: recent[:8]})
		clock.Advance(2 * time.Second) // s1 starts reading a little later
		tr.Apply(Batch{Source: "s1", Events: recent[8:]})
		clock.Advance(9 * time.Second) // the hold is over; s1 has not read to its end yet
		tr.Reap()
		if j := jobView(t, tr, "host"); j.Missed != 0 || j.DecidedUntil.After(min(9, 12)) {
			t.Fatalf("missed %d, decided until %s: s1 had not caught up", j.Missed, j.DecidedUntil)
		}
		tr.Apply(Batch{Source: "s1", AtEnd: true})
		tr.Reap()
		if j := jobView(t, tr, "host"); j.Missed != 0 || j.RunCounts[0] != 9 {
			t.Fatalf("missed %d successes %d, want 0 and 9", j.Missed, j.RunCounts[0])
		}
	})
	t.Run("a late record is applied, counted, and reopens nothing", func(t *testing.T) {
		clock := &fakeClock{now: min(10, 0)}
		tr := oracleTracker(clock, 1)
		tr.Apply(Batch{Source: "s0", AtEnd: true, Events: run(1, 1)})
		tr.Reap() // 2 to 9 missed
		tr.Apply(Batch{Source: "s0", AtEnd: true, Events: run(4, 4)})
		j := jobView(t, tr, "host")
		_, srcs := tr.View()
		if j.Missed != 8 || j.RunCounts[0] != 2 || srcs[0].LateRecords != 2 || j.Overlaps != 0 {
			t.Fatalf("missed %d successes %d late %d overlaps %d; want 8 2 2 0", j.Missed, j.RunCounts[0], srcs[0].LateRecords, j.Overlaps)
		}
	})
}

// Runs of a host-scope job on two hosts at once are what it is for: no
// overlap. A cluster-scope job's are.
func TestOverlapsPerHost(t *testing.T) {
	for _, tc := range []struct {
		scope string
		want  uint64
	}{{"host", 1}, {"cluster", 2}} {
		clock := &fakeClock{now: oracleEnd}
		tr := oracleTracker(clock, 1)
		job := tc.scope
		tr.Apply(Batch{Source: "s0", AtEnd: true, Events: []Event{
			{Kind: Start, Job: job, Host: "a", PID: 1, Time: oracleStart},
			{Kind: Start, Job: job, Host: "b", PID: 1, Time: oracleStart.Add(time.Second)},
			{Kind: Start, Job: job, Host: "a", PID: 2, Time: oracleStart.Add(2 * time.Second)},
		}})
		if j := jobView(t, tr, job); j.Overlaps != tc.want {
			t.Errorf("scope %s: %d overlaps, want %d", tc.scope, j.Overlaps, tc.want)
		}
	}
}

// A backward step of the host's clock does not move "now" back: seconds
// since the last success go on growing, and the job turns stale when it
// should. A forward step is taken as it comes.
func TestClockSteps(t *testing.T) {
	wall := oracleStart
	var mono time.Duration
	tr := New(Options{Host: "here", Now: func() time.Time { return wall }, Mono: func() time.Duration { return mono }, StartupHold: NoStartupHold})
	tr.Configure([]JobSpec{{Name: "j", Schedule: schedule.Every(time.Hour), StaleMultiple: 2}}, []SourceSpec{{Name: "s", Runs: true}})
	tr.Apply(Batch{Source: "s", AtEnd: true, Events: []Event{{Kind: End, Job: "j", Host: "a", Time: wall, Result: Success}}})
	step := func(wallBy, monoBy time.Duration) time.Time {
		wall, mono = wall.Add(wallBy), mono+monoBy
		return tr.Now()
	}
	if now := step(-3*time.Hour, time.Minute); !now.Equal(oracleStart.Add(time.Minute)) {
		t.Fatalf("after a step back of 3h and a minute: now %s, want %s", now, oracleStart.Add(time.Minute))
	}
	now := step(time.Hour, 2*time.Hour+time.Minute) // the wall is still 2h behind what has passed
	j := jobView(t, tr, "j")
	if w := j.Watch(now); w.SinceSuccess != 2*time.Hour+2*time.Minute || !w.Stale {
		t.Fatalf("since success %s stale %v; want 2h2m and stale", w.SinceSuccess, w.Stale)
	}
	if now := step(5*time.Hour, time.Second); !now.Equal(wall) {
		t.Fatalf("a step forward: now %s, want the wall clock %s", now, wall)
	}
}

// A job whose first record is dated decades ago counts its missed runs
// over the last maxMissedHorizon slots only.
func TestMissedRunsHorizon(t *testing.T) {
	clock := &fakeClock{now: oracleStart}
	tr := oracleTracker(clock, 1)
	old := time.Date(2000, 1, 1, 0, 0, 5, 0, time.UTC)
	tr.Apply(Batch{Source: "s0", AtEnd: true, Events: []Event{{Kind: Start, Job: "host", Host: "a", PID: 1, Time: old}, {Kind: End, Job: "host", Host: "a", PID: 1, Time: old.Add(time.Second), Result: Success}}})
	tr.Reap()
	if j := jobView(t, tr, "host"); j.Missed != maxMissedHorizon {
		t.Fatalf("missed %d, want %d", j.Missed, maxMissedHorizon)
	}
}

// The oracle at scale, with a kill: 25 hosts running a minutely job for
// 10,000 minutes (500,000 records) in one source, a sparse second source
// with some of the ends and the skips, and jobwatch killed in the middle of
// the catch-up (the state as a save wrote it, restored by a new model, each
// source going on from its saved position): the counters of the one
// time-ordered stream.
func TestEventTimeScaleKill(t *testing.T) {
	if testing.Short() {
		t.Skip("500,000 records")
	}
	const hosts, slots = 25, 10_000
	rng := rand.New(rand.NewPCG(23, 1))
	end := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	base := end.Add(-slots * time.Minute)
	var a, b []Event
	for s := range slots {
		at := base.Add(time.Duration(s) * time.Minute)
		for h := range hosts {
			host := fmt.Sprintf("web%02d", h)
			if rng.IntN(500) == 0 {
				continue // this host missed the slot
			}
			if rng.IntN(200) == 0 {
				b = append(b, Event{Kind: Skip, Job: "host", Host: host, Time: at.Add(time.Second), SkipLabel: "locked"})
				continue
			}
			pid := 10 + s%30000
			start := at.Add(time.Duration(rng.IntN(10_000)) * time.Millisecond)
			a = append(a, Event{Kind: Start, Job: "host", Host: host, PID: pid, Time: start})
			e := Event{Kind: End, Job: "host", Host: host, PID: pid, Time: start.Add(time.Duration(1+rng.IntN(30)) * time.Second), Result: Success, HasExitCode: true}
			if rng.IntN(97) == 0 {
				b = append(b, e) // its start is in the other source
			} else {
				a = append(a, e)
			}
		}
	}
	sortByTime := func(evs []Event) { slices.SortStableFunc(evs, func(x, y Event) int { return x.Time.Compare(y.Time) }) }
	sortByTime(a)
	sortByTime(b)
	newTracker := func(clock *fakeClock, specs ...SourceSpec) *Tracker {
		tr := New(Options{Host: "here", Now: clock.Now, Alive: func(int) bool { return true }}) // the start-up hold
		tr.Configure([]JobSpec{{Name: "host", Schedule: grid{time.Minute}, Grace: 20 * time.Second, Timeout: 5 * time.Minute, Scope: "host", StaleMultiple: 2}}, specs)
		return tr
	}
	spec := func(name string) SourceSpec {
		return SourceSpec{Name: name, Type: "runlog", Identity: "runlog:" + name, Runs: true, LateWindow: 2 * time.Second}
	}
	// feed hands src's records from its saved position on, in batches of
	// 1000, the position being the next record's index; stop, when not
	// negative, is where a kill comes.
	feed := func(tr *Tracker, name string, evs []Event, stop int) {
		from := 0
		if p := tr.Position(name); p != nil {
			if err := json.Unmarshal(p, &from); err != nil {
				t.Fatal(err)
			}
		}
		for i := from; i < len(evs); {
			if stop >= 0 && i >= stop {
				return
			}
			n := min(1000, len(evs)-i)
			pos, _ := json.Marshal(i + n)
			tr.Apply(Batch{Source: name, Events: evs[i : i+n], Position: pos, AtEnd: i+n == len(evs)})
			i += n
		}
		if len(evs) == 0 || from == len(evs) {
			tr.Apply(Batch{Source: name, AtEnd: true})
		}
	}
	finish := func(tr *Tracker, clock *fakeClock) string {
		clock.Advance(time.Minute) // past the hold, and the last slot's grace
		tr.Reap()
		return verdicts(tr)
	}

	clock := &fakeClock{now: end}
	one := newTracker(clock, spec("all"))
	all := slices.Concat(a, b)
	sortByTime(all)
	feed(one, "all", all, -1)
	want := finish(one, clock)

	clock = &fakeClock{now: end}
	tr := newTracker(clock, spec("a"), spec("b"))
	feed(tr, "b", b, -1)
	feed(tr, "a", a, len(a)/3) // killed a third of the way
	snap := tr.Snapshot()      // what the last save wrote
	tr = newTracker(clock, spec("a"), spec("b"))
	if err := tr.Restore(snap); err != nil {
		t.Fatal(err)
	}
	feed(tr, "a", a, -1)
	feed(tr, "b", b, -1)
	if got := finish(tr, clock); got != want {
		t.Fatalf("two sources and a kill give other verdicts than one stream:\n%s", firstDiff(got, want))
	}
	if j := jobView(t, tr, "host"); j.Missed == 0 || j.RunCounts[0] < slots*hosts/2 {
		t.Fatalf("missed %d, runs %v: the records did not make the runs they are for", j.Missed, j.RunCounts)
	}
}

// A source that reads nothing at all (a run log that cannot be opened)
// holds back, once the start-up hold is over, only the jobs it reported
// before: those may have records waiting in it; others cannot wait on it
// for ever.
func TestSourceThatNeverReads(t *testing.T) {
	clock := &fakeClock{now: oracleStart.Add(time.Hour)}
	tr := New(Options{Host: "here", Now: clock.Now, Alive: func(int) bool { return true }})
	specs := []SourceSpec{{Name: "good", Runs: true, LateWindow: time.Second}, {Name: "broken", Runs: true, LateWindow: time.Second}}
	tr.Configure(oracleJobs(), specs)
	tr.Apply(Batch{Source: "broken", AtEnd: true, Events: []Event{{Kind: Start, Job: "cluster", Host: "a", PID: 1, Time: oracleStart}}})
	snap := tr.Snapshot()
	tr = New(Options{Host: "here", Now: clock.Now, Alive: func(int) bool { return true }}) // a restart; broken reads nothing since
	tr.Configure(oracleJobs(), specs)
	if err := tr.Restore(snap); err != nil {
		t.Fatal(err)
	}
	ran := []Event{{Kind: Start, Job: "host", Host: "a", PID: 2, Time: clock.now.Add(-time.Minute)}, {Kind: Start, Job: "cluster", Host: "a", PID: 3, Time: clock.now.Add(-time.Minute)}}
	tr.Apply(Batch{Source: "good", AtEnd: true, Events: ran})
	clock.Advance(5 * time.Second)
	tr.Reap()
	if j := jobView(t, tr, "host"); len(j.Pending) != 1 {
		t.Fatalf("during the hold: %d held, want 1", len(j.Pending))
	}
	clock.Advance(10 * time.Second)
	tr.Reap()
	if j := jobView(t, tr, "host"); len(j.Pending) != 0 || len(j.Open) != 1 {
		t.Errorf("after the hold, the job broken never reported: %d held, %d running; want 0 and 1", len(j.Pending), len(j.Open))
	}
	if j := jobView(t, tr, "cluster"); len(j.Pending) != 2 { // its record from before the restart, and the new one
		t.Errorf("the job broken reported before: %d held, want 2 (it waits for broken)", len(j.Pending))
	}
}

// jobwatch run writes a run's start and then, when the lock is held, a
// skip of the same run, often in the same millisecond: the start comes
// first, so the skip closes it.
func TestStartThenSkipOfOneInstant(t *testing.T) {
	clock := &fakeClock{now: oracleEnd}
	tr := oracleTracker(clock, 1)
	at := oracleStart.Add(time.Minute)
	tr.Apply(Batch{Source: "s0", AtEnd: true, Events: []Event{
		{Kind: Skip, Job: "host", Host: "a", PID: 7, RunID: "r1", Time: at, SkipLabel: "locked"},
		{Kind: Start, Job: "host", Host: "a", PID: 7, RunID: "r1", Time: at},
	}})
	if j := jobView(t, tr, "host"); len(j.Open) != 0 || j.Skips != 1 {
		t.Fatalf("running %d skips %d, want 0 and 1", len(j.Open), j.Skips)
	}
}
