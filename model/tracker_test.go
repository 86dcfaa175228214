package model

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) Advance(d time.Duration) { c.now = c.now.Add(d) }

func newTestTracker(clock *fakeClock, alive map[int]bool) *Tracker {
	tr := New(Options{
		Host: "here", StartupHold: NoStartupHold,
		Now:   clock.Now,
		Alive: func(pid int) bool { return alive[pid] },
	})
	tr.Configure([]JobSpec{
		{Name: "stats", Schedule: schedule.Every(time.Hour), StaleMultiple: 2},
		{Name: "backup", Schedule: schedule.Every(24 * time.Hour), Timeout: 30 * time.Minute, StaleMultiple: 2},
	}, []SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
	return tr
}

func at(d time.Duration) time.Time { return t0.Add(d) }

func start(job, host string, pid int, t time.Time) Event {
	return Event{Kind: Start, Job: job, Host: host, PID: pid, Time: t}
}

func end(job, host string, pid int, t time.Time, r Result) Event {
	return Event{Kind: End, Job: job, Host: host, PID: pid, Time: t, Result: r, ExitCode: map[Result]int{Success: 0}[r], HasExitCode: true}
}

func skip(job string, t time.Time) Event {
	return Event{Kind: Skip, Job: job, Host: "web1", PID: 9, Time: t, Reason: "locked"}
}

func jobView(t *testing.T, tr *Tracker, name string) JobView {
	t.Helper()
	jobs, _ := tr.View()
	for _, j := range jobs {
		if j.Spec.Name == name {
			return j
		}
	}
	t.Fatalf("job %q not in view", name)
	return JobView{}
}

func TestTrackerApply(t *testing.T) {
	type want struct {
		runs                       [6]uint64 // success, failure, timeout, lost, too_short, unknown
		running, overlaps, skips   int
		consecSkips, consecFail    uint64
		lastSuccess, lastFailure   time.Time
		lastDuration               float64
		histCount                  uint64
		lastExit                   int
		openHosts                  []string
		unknownRecords, records    uint64
		parseErrors, positionReset uint64
	}
	cases := []struct {
		name   string
		events []Event
		batch  Batch // extra fields of the batch
		want   want
	}{
		{
			name:   "start then success",
			events: []Event{start("stats", "web1", 42, at(0)), end("stats", "web1", 42, at(40*time.Second), Success)},
			want:   want{runs: [6]uint64{1, 0, 0, 0}, lastSuccess: at(40 * time.Second), lastDuration: 40, histCount: 1, records: 2},
		},
		{
			name: "stated duration wins over the start record",
			events: []Event{start("stats", "web1", 42, at(0)),
				{Kind: End, Job: "stats", Host: "web1", PID: 42, Time: at(41 * time.Second), Result: Success, Duration: 40400 * time.Millisecond, HasDuration: true}},
			want: want{runs: [6]uint64{1, 0, 0, 0}, lastSuccess: at(41 * time.Second), lastDuration: 40.4, histCount: 1, records: 2},
		},
		{
			name:   "end without a start still counts",
			events: []Event{{Kind: End, Job: "stats", Host: "web1", PID: 42, Time: at(time.Minute), Result: Failure, ExitCode: 3, HasExitCode: true}},
			want:   want{runs: [6]uint64{0, 1, 0, 0}, consecFail: 1, lastFailure: at(time.Minute), lastExit: 3, records: 1},
		},
		{
			name: "failures count until a success",
			events: []Event{
				end("stats", "web1", 1, at(time.Hour), Failure),
				end("stats", "web1", 2, at(2*time.Hour), Timeout),
				end("stats", "web1", 3, at(3*time.Hour), Success),
				end("stats", "web1", 4, at(4*time.Hour), Failure),
			},
			want: want{runs: [6]uint64{1, 2, 1, 0}, consecFail: 1, lastSuccess: at(3 * time.Hour), lastFailure: at(4 * time.Hour), lastExit: 0, records: 4},
		},
		{
			name: "overlap on one host: second start while the first runs",
			events: []Event{
				start("stats", "web1", 1, at(0)),
				start("stats", "web1", 2, at(time.Hour)),
				start("stats", "web1", 3, at(2*time.Hour)),
			},
			want: want{running: 3, overlaps: 2, openHosts: []string{"web1", "web1", "web1"}, records: 3},
		},
		{
			name: "two hosts at once count as running 2 and one overlap",
			events: []Event{
				start("stats", "web1", 10, at(0)),
				start("stats", "web2", 10, at(time.Second)),
				end("stats", "web1", 10, at(time.Minute), Success),
			},
			want: want{runs: [6]uint64{1, 0, 0, 0}, running: 1, overlaps: 1, lastSuccess: at(time.Minute), lastDuration: 60, histCount: 1, openHosts: []string{"web2"}, records: 3},
		},
		{
			name: "skips count until a run starts",
			events: []Event{
				start("stats", "web1", 1, at(0)),
				skip("stats", at(time.Hour)),
				skip("stats", at(2*time.Hour)),
				end("stats", "web1", 1, at(150*time.Minute), Success),
				skip("stats", at(3*time.Hour)),
				start("stats", "web1", 5, at(4*time.Hour)),
				skip("stats", at(5*time.Hour)),
			},
			want: want{runs: [6]uint64{1, 0, 0, 0}, skips: 4, consecSkips: 1, running: 1, lastSuccess: at(150 * time.Minute), lastDuration: 9000, histCount: 1, openHosts: []string{"web1"}, records: 7},
		},
		{
			name: "run id matches start and end across a reused pid",
			events: []Event{
				{Kind: Start, Job: "stats", Host: "web1", PID: 7, RunID: "a", Time: at(0)},
				{Kind: Start, Job: "stats", Host: "web1", PID: 7, RunID: "b", Time: at(time.Minute)},
				{Kind: End, Job: "stats", Host: "web1", PID: 7, RunID: "b", Time: at(2 * time.Minute), Result: Success},
			},
			want: want{runs: [6]uint64{1, 0, 0, 0}, running: 1, overlaps: 1, lastSuccess: at(2 * time.Minute), lastDuration: 60, histCount: 1, openHosts: []string{"web1"}, records: 3},
		},
		{
			name: "a started run later marked skipped leaves the runs in progress",
			events: []Event{
				{Kind: Start, Job: "stats", Host: "db", PID: 5, RunID: "t:9", Time: at(0)},
				{Kind: Skip, Job: "stats", Host: "db", PID: 5, RunID: "t:9", Time: at(time.Second)},
			},
			want: want{skips: 1, consecSkips: 1, records: 2},
		},
		{
			name:   "the same start read twice is one run",
			events: []Event{start("stats", "web1", 1, at(0)), start("stats", "web1", 1, at(0))},
			want:   want{running: 1, openHosts: []string{"web1"}, records: 2},
		},
		{
			name:   "unknown jobs are counted, not tracked",
			events: []Event{start("nope", "web1", 1, at(0)), start("stats", "web1", 2, at(0))},
			want:   want{running: 1, openHosts: []string{"web1"}, records: 2, unknownRecords: 1},
		},
		{
			name:   "records from the future are parse errors",
			events: []Event{start("stats", "web1", 1, at(24*time.Hour))},
			batch:  Batch{ParseErrors: 2, PositionResets: 1},
			want:   want{parseErrors: 3, positionReset: 1},
		},
		{
			name:   "an older success does not move last success back",
			events: []Event{end("stats", "a", 1, at(2*time.Hour), Success), end("stats", "b", 2, at(time.Hour), Success)},
			want:   want{runs: [6]uint64{2, 0, 0, 0}, lastSuccess: at(2 * time.Hour), records: 2},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{now: t0.Add(6 * time.Hour)}
			tr := newTestTracker(clock, nil)
			b := tc.batch
			b.Source = "runs"
			b.Events = tc.events
			tr.Apply(b)
			j := jobView(t, tr, "stats")
			got := want{
				runs: j.RunCounts, running: len(j.Open), overlaps: int(j.Overlaps), skips: int(j.Skips),
				consecSkips: j.ConsecutiveSkips, consecFail: j.ConsecutiveFailures,
				lastSuccess: j.LastSuccess.Time(), lastFailure: j.LastFailure.Time(), lastDuration: j.LastDuration,
				histCount: j.Durations.Count, lastExit: j.LastExitCode,
			}
			for _, r := range j.Open {
				got.openHosts = append(got.openHosts, r.Host)
			}
			_, srcs := tr.View()
			got.records, got.unknownRecords = srcs[0].Records, srcs[0].UnknownJob
			got.parseErrors, got.positionReset = srcs[0].ParseErrors, srcs[0].PositionResets
			if !equalWant(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func equalWant[T any](a, b T) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestReapClosesRunsOfGoneProcesses(t *testing.T) {
	clock := &fakeClock{now: t0}
	alive := map[int]bool{1: true, 2: false}
	tr := newTestTracker(clock, alive)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{
		start("stats", "here", 1, at(0)),
		start("stats", "here", 2, at(0)),
		start("stats", "elsewhere", 3, at(0)), // another host: its PID means nothing here
	}})
	tr.Reap()
	if got := len(jobView(t, tr, "stats").Open); got != 3 {
		t.Fatalf("a process just gone must get time to write its end record: running %d, want 3", got)
	}
	clock.Advance(DefaultLostAfter)
	tr.Reap()
	j := jobView(t, tr, "stats")
	if len(j.Open) != 2 || j.RunCounts[3] != 1 || j.ConsecutiveFailures != 1 {
		t.Fatalf("after LostAfter: running %d lost %d consecutive failures %d; want 2, 1, 1", len(j.Open), j.RunCounts[3], j.ConsecutiveFailures)
	}
	// The real end of the lost run arrives late: still its result, once
	// (the lost count stays: counters never go back).
	clock.Advance(time.Minute)
	late := end("stats", "here", 2, clock.Now().Add(-time.Second), Failure)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{late, late}})
	tr.Reap()
	if j := jobView(t, tr, "stats"); j.RunCounts[1] != 1 || j.RunCounts[3] != 1 {
		t.Fatalf("late end of a lost run: failures %d lost %d, want 1 and 1", j.RunCounts[1], j.RunCounts[3])
	}
}

func TestReapClosesRunsPastTimeout(t *testing.T) {
	clock := &fakeClock{now: t0}
	tr := newTestTracker(clock, nil)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{start("backup", "elsewhere", 1, at(0))}})
	clock.Advance(30*time.Minute + TimeoutMargin)
	tr.Reap()
	if n := len(jobView(t, tr, "backup").Open); n != 1 {
		t.Fatalf("closed at exactly the timeout and TimeoutMargin; want only after it")
	}
	clock.Advance(time.Second)
	tr.Reap()
	j := jobView(t, tr, "backup")
	if len(j.Open) != 0 || j.RunCounts[3] != 1 || !j.LastFailure.Equal(at(30*time.Minute)) {
		t.Fatalf("running %d lost %d at %s, want 0 and 1 at the timeout", len(j.Open), j.RunCounts[3], j.LastFailure)
	}
}

func TestWatchStaleness(t *testing.T) {
	clock := &fakeClock{now: t0}
	tr := newTestTracker(clock, nil)
	check := func(wantSince time.Duration, wantStale bool) {
		t.Helper()
		w := func() Watch { j := jobView(t, tr, "stats"); return j.Watch(clock.now) }()
		if w.SinceSuccess != wantSince || w.Stale != wantStale {
			t.Fatalf("at %s: since %s stale %v, want %s %v", clock.now.Sub(t0), w.SinceSuccess, w.Stale, wantSince, wantStale)
		}
	}
	// Never succeeded: counted from when jobwatch first watched it.
	clock.Advance(90 * time.Minute)
	check(90*time.Minute, false)
	clock.Advance(31 * time.Minute)
	check(121*time.Minute, true)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{end("stats", "web1", 1, clock.now, Success)}})
	check(0, false)
	clock.Advance(114 * time.Minute) // 1.9 periods
	check(114*time.Minute, false)
	clock.Advance(7 * time.Minute)
	check(121*time.Minute, true)
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	clock := &fakeClock{now: t0.Add(time.Hour)}
	tr := newTestTracker(clock, nil)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Position: json.RawMessage(`{"offset":123}`), Events: []Event{
		start("stats", "web1", 1, at(0)),
		end("stats", "web1", 1, at(40*time.Second), Success),
		start("stats", "web1", 2, at(50*time.Second)),
		skip("stats", at(55*time.Second)),
		end("backup", "web1", 3, at(time.Minute), Failure),
	}, ParseErrors: 2})
	snap := tr.Snapshot()
	clock.Advance(time.Hour) // a restart an hour later
	tr2 := newTestTracker(clock, nil)
	if err := tr2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	a, as := tr.View()
	b, bs := tr2.View()
	if !equalWant(a, b) || !equalWant(as, bs) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		t.Fatalf("restored state differs:\n%s\n%s", ja, jb)
	}
	if got := string(tr2.Position("runs")); got != `{"offset":123}` {
		t.Fatalf("position %s", got)
	}

}

func TestConfigureKeepsStateOfRemainingJobs(t *testing.T) {
	clock := &fakeClock{now: t0}
	tr := newTestTracker(clock, nil)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{end("stats", "web1", 1, at(0), Success)}})
	clock.Advance(time.Hour)
	tr.Configure([]JobSpec{{Name: "stats", Schedule: schedule.Every(time.Minute), StaleMultiple: 3}, {Name: "new", Schedule: schedule.Every(time.Minute), StaleMultiple: 2}}, nil)
	if j := jobView(t, tr, "stats"); j.RunCounts[0] != 1 || j.Spec.StaleMultiple != 3 {
		t.Fatalf("stats lost its state or kept its old spec: %+v", j)
	}
	if j := jobView(t, tr, "new"); !j.FirstWatched.Equal(clock.now) {
		t.Fatalf("new job first watched %s, want %s", j.FirstWatched, clock.now)
	}
	if jobs, _ := tr.View(); len(jobs) != 2 {
		t.Fatalf("removed job still tracked: %d jobs", len(jobs))
	}
	// A batch of a source removed by the reload is dropped, not a panic.
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{end("stats", "web1", 1, at(0), Success)}})
}

// Starts whose ends never come cannot grow the model, or the run-start
// series, without bound.
func TestOpenRunsAreBounded(t *testing.T) {
	clock := &fakeClock{now: t0.Add(time.Hour)}
	tr := newTestTracker(clock, nil)
	var evs []Event
	for i := range MaxOpenRuns + 5 {
		evs = append(evs, start("stats", "elsewhere", i+1, at(time.Duration(i)*time.Millisecond)))
	}
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: evs})
	j := jobView(t, tr, "stats")
	if len(j.Open) != MaxOpenRuns || j.RunCounts[3] != 5 {
		t.Fatalf("open %d lost %d, want %d and 5", len(j.Open), j.RunCounts[3], MaxOpenRuns)
	}
	if j.Open[0].PID != 6 {
		t.Fatalf("oldest open run is pid %d, want 6: the oldest must go first", j.Open[0].PID)
	}
}

// A source removed from the config and configured again, under its old name
// or a new one, goes on from its position instead of reading it all again.
func TestRetiredSourcesKeepTheirPosition(t *testing.T) {
	clock := &fakeClock{now: t0}
	tr := New(Options{Host: "here", Now: clock.Now})
	jobs := []JobSpec{{Name: "stats", Schedule: schedule.Every(time.Hour), StaleMultiple: 2}}
	runs := SourceSpec{Name: "runs", Type: "runlog", Identity: "runlog:/var/log/runs.log"}
	tr.Configure(jobs, []SourceSpec{runs})
	tr.Apply(Batch{Source: "runs", AtEnd: true, Position: json.RawMessage(`{"offset":10}`), Events: []Event{start("stats", "a", 1, at(0))}})

	tr.Configure(jobs, nil) // removed
	if got := tr.Position("runs"); got != nil {
		t.Fatalf("removed source still has a position: %s", got)
	}
	renamed := SourceSpec{Name: "app-runs", Type: "runlog", Identity: runs.Identity}
	other := SourceSpec{Name: "other", Type: "runlog", Identity: "runlog:/elsewhere.log"}
	tr.Configure(jobs, []SourceSpec{renamed, other})
	if got := string(tr.Position("app-runs")); got != `{"offset":10}` {
		t.Fatalf("renamed source starts at %q, want the old position", got)
	}
	if got := tr.Position("other"); got != nil {
		t.Fatalf("a source of another file took a position: %s", got)
	}
	_, srcs := tr.View()
	if srcs[0].Name != "app-runs" || srcs[0].Records != 1 {
		t.Fatalf("renamed source's counters: %+v", srcs[0])
	}

	// The same across a restart: a source renamed while jobwatch was
	// stopped finds its position in the saved state.
	snap := tr.Snapshot()
	tr2 := New(Options{Host: "here", Now: clock.Now})
	tr2.Configure(jobs, []SourceSpec{{Name: "runs-again", Type: "runlog", Identity: runs.Identity}})
	if err := tr2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got := string(tr2.Position("runs-again")); got != `{"offset":10}` {
		t.Fatalf("after restart the renamed source starts at %q", got)
	}
	// A source whose file changed starts over.
	tr2.Configure(jobs, []SourceSpec{{Name: "runs-again", Type: "runlog", Identity: "runlog:/new/path.log"}})
	if got := tr2.Position("runs-again"); got != nil {
		t.Fatalf("a source reading another file kept the old position %s", got)
	}
}

// A job keeps the lease named by its latest start that named one: a start
// without one (another source, a run without its lock) leaves it, an older
// start read late does not replace it.
func TestLockTTLOfLatestStart(t *testing.T) {
	clock := &fakeClock{now: at(time.Hour)}
	tr := newTestTracker(clock, nil)
	withTTL := func(e Event, ttl time.Duration) Event { e.LockTTL = ttl; return e }
	for _, tc := range []struct {
		name string
		ev   Event
		want time.Duration
	}{
		{"none yet", start("stats", "web1", 1, at(0)), 0},
		{"first lease", withTTL(start("stats", "web1", 2, at(time.Minute)), 90*time.Second), 90 * time.Second},
		{"start without one keeps it", start("stats", "web1", 3, at(2*time.Minute)), 90 * time.Second},
		{"older start read late", withTTL(start("stats", "web2", 4, at(30*time.Second)), 10*time.Second), 90 * time.Second},
		{"newer lease replaces it", withTTL(start("stats", "web1", 5, at(3*time.Minute)), 2*time.Minute), 2 * time.Minute},
	} {
		tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{tc.ev}})
		if got := jobView(t, tr, "stats").LockTTL; got != tc.want {
			t.Errorf("%s: lock TTL %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := tr.Snapshot().Jobs["stats"].LockTTL; got != 2*time.Minute {
		t.Errorf("snapshot's lock TTL %v", got)
	}
	if got := jobView(t, tr, "backup").LockTTL; got != 0 {
		t.Errorf("another job has lock TTL %v", got)
	}
}

// TestMinDuration: a run that succeeds in less than its job's min_duration
// did nothing: it counts as too_short, moves no last success and counts as
// a failure in a row; one that takes longer, or fails, is as it says.
func TestMinDuration(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: now}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure([]JobSpec{{Name: "backup", Schedule: schedule.Every(time.Hour), MinDuration: 30 * time.Second, StaleMultiple: 2}},
		[]SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
	at := func(m int) time.Time { return now.Add(time.Duration(m-60) * time.Minute) }
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{
		start("backup", "a", 1, at(0)), end("backup", "a", 1, at(10), Success), // 10 minutes: a real run
		start("backup", "a", 2, at(20)), end("backup", "a", 2, at(20).Add(100*time.Millisecond), Success),
		start("backup", "a", 3, at(30)), end("backup", "a", 3, at(30).Add(time.Second), Failure),
		{Kind: End, Job: "backup", Host: "a", PID: 4, Time: at(40), Result: Success, Duration: 5 * time.Second, HasDuration: true},
		{Kind: End, Job: "backup", Host: "a", PID: 5, Time: at(50), Result: Success}, // no duration known: taken at its word
	}})
	clock.Advance(time.Second)
	tr.Reap()
	j := jobView(t, tr, "backup")
	got := map[Result]uint64{}
	for i, r := range Results {
		got[r] = j.RunCounts[i]
	}
	if got[Success] != 2 || got[TooShort] != 2 || got[Failure] != 1 {
		t.Errorf("runs by result %v, want 2 success, 2 too_short, 1 failure", got)
	}
	if !j.LastSuccess.Equal(at(50)) {
		t.Errorf("last success %s, want %s", j.LastSuccess, at(50))
	}
	if j.Recent[1].Fields().Result != TooShort {
		t.Errorf("recent run: %+v", j.Recent[1].Fields())
	}
}
