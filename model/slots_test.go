package model

import (
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/schedule"
)

// grid is a test calendar: a run expected at every multiple of step.
type grid struct{ step time.Duration }

func (g grid) Next(t time.Time) time.Time { return t.Truncate(g.step).Add(g.step) }
func (g grid) Prev(t time.Time) time.Time { return t.Truncate(g.step) }

func slotTracker(clock *fakeClock, scope string) *Tracker {
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure([]JobSpec{{Name: "hourly", Schedule: grid{time.Hour}, Grace: time.Minute, Scope: scope, StaleMultiple: 2}},
		[]SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
	tr.SetHealth("runs", true, nil)
	return tr
}

func TestSlots(t *testing.T) {
	h := func(hh, mm, ss int) time.Time { return time.Date(2026, 11, 30, hh, mm, ss, 0, time.UTC) }
	type want struct{ missed, unexpected, overlap, double, multi uint64 }
	cases := []struct {
		name   string
		scope  string
		events []Event
		want   want
	}{
		{"on time every hour", "host", []Event{
			start("hourly", "a", 1, h(10, 0, 5)), end("hourly", "a", 1, h(10, 0, 30), Success),
			start("hourly", "a", 2, h(11, 0, 59)), end("hourly", "a", 2, h(11, 2, 0), Success),
		}, want{}},
		{"a slot without a run is missed", "host", []Event{
			start("hourly", "a", 1, h(10, 0, 5)),
			start("hourly", "a", 2, h(13, 0, 2)),
		}, want{missed: 2}},
		{"a run past grace is unexpected, and its slot missed", "host", []Event{
			start("hourly", "a", 1, h(10, 0, 5)),
			start("hourly", "a", 2, h(10, 30, 0)),
			start("hourly", "a", 3, h(11, 1, 1)),
		}, want{missed: 1, unexpected: 2}},
		{"second run of a slot while the first runs: overlap", "host", []Event{
			start("hourly", "a", 1, h(10, 0, 1)),
			start("hourly", "a", 2, h(10, 0, 30)),
		}, want{overlap: 1}},
		{"second run of a slot after the first ended: double trigger", "host", []Event{
			start("hourly", "a", 1, h(10, 0, 1)), end("hourly", "a", 1, h(10, 0, 10), Success),
			start("hourly", "a", 2, h(10, 0, 40)),
		}, want{double: 1}},
		{"a run still going when the next slot starts is no duplicate", "host", []Event{
			start("hourly", "a", 1, h(10, 0, 1)),
			start("hourly", "a", 2, h(11, 0, 1)),
		}, want{}},
		{"host scope: every host runs each slot", "host", []Event{
			start("hourly", "a", 1, h(10, 0, 1)),
			start("hourly", "b", 1, h(10, 0, 2)),
		}, want{}},
		{"cluster scope: a second host in one slot", "cluster", []Event{
			start("hourly", "a", 1, h(10, 0, 1)),
			start("hourly", "b", 1, h(10, 0, 2)),
			start("hourly", "c", 1, h(10, 0, 3)),
		}, want{multi: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{now: h(14, 0, 0)}
			tr := slotTracker(clock, tc.scope)
			// A source still reading: decided up to its last record.
			tr.Apply(Batch{Source: "runs", Events: tc.events})
			j := jobView(t, tr, "hourly")
			got := want{j.Missed, j.Unexpected, j.DupCounts[0], j.DupCounts[1], j.DupCounts[2]}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestMissedSlotsByTheClock(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 1, 0, 0, time.UTC)}
	tr := New(Options{Host: "here", Now: clock.Now, Alive: func(int) bool { return true }}) // the start-up hold as configured by default
	configure := func() {
		tr.Configure([]JobSpec{{Name: "hourly", Schedule: grid{time.Hour}, Grace: time.Minute, StaleMultiple: 2}}, []SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
	}
	configure() // first watched at 10:01
	missed := func() uint64 { return jobView(t, tr, "hourly").Missed }
	clock.Advance(65 * time.Minute) // 11:06, but within the hold of a restart
	configure()
	tr.Reap()
	if m := missed(); m != 0 {
		t.Fatalf("counted %d before the source read anything", m)
	}
	tr.Apply(Batch{Source: "runs", AtEnd: true}) // read to its end: nothing new
	tr.Reap()
	if m := missed(); m != 0 {
		t.Fatalf("counted %d during the hold", m)
	}
	clock.Advance(115 * time.Minute) // 13:01: 11:00, 12:00 and 13:00 are past their grace
	tr.Reap()
	if m := missed(); m != 3 {
		t.Fatalf("missed %d, want 3", m)
	}
	consecutive := func(want uint64) {
		t.Helper()
		if c := jobView(t, tr, "hourly").ConsecutiveMissed; c != want {
			t.Fatalf("consecutive missed %d, want %d", c, want)
		}
	}
	consecutive(3)
	// While the job's source cannot be read nothing is counted: its runs
	// may only be unread.
	tr.SetHealth("runs", false, nil)
	clock.Advance(2 * time.Hour)
	tr.Reap()
	if m := missed(); m != 3 {
		t.Fatalf("missed %d while the source is down, want 3", m)
	}
	// The runs come in once it is back: 14:00 ran, 15:00 did not.
	tr.SetHealth("runs", true, nil)
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{start("hourly", "a", 2, time.Date(2026, 11, 30, 14, 0, 3, 0, time.UTC))}})
	tr.Reap()
	if m := missed(); m != 4 {
		t.Fatalf("missed %d, want 4", m)
	}
	consecutive(1) // 15:00, since the run of 14:00
	// A skip in its slot is the scheduler starting the job: nothing missed
	// since; nor after a run at a time the schedule does not give.
	clock.Advance(time.Hour) // 16:01
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{{Kind: Skip, Job: "hourly", Host: "a", Time: time.Date(2026, 11, 30, 16, 0, 30, 0, time.UTC)}}})
	clock.Advance(10 * time.Second)
	tr.Reap()
	consecutive(0)
	clock.Advance(time.Hour) // 17:01
	tr.Reap()
	consecutive(1)
	clock.Advance(29 * time.Minute) // 17:30
	tr.Apply(Batch{Source: "runs", AtEnd: true, Events: []Event{start("hourly", "a", 3, time.Date(2026, 11, 30, 17, 30, 0, 0, time.UTC))}})
	clock.Advance(10 * time.Second)
	tr.Reap()
	consecutive(0)
}

// TestNoConsecutiveMissedForEvery: an every: job has no slots to miss.
func TestNoConsecutiveMissedForEvery(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
	tr.Configure([]JobSpec{{Name: "every", Schedule: schedule.Every(time.Minute), StaleMultiple: 2}}, []SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
	tr.Apply(Batch{Source: "runs", AtEnd: true})
	clock.Advance(time.Hour)
	tr.Reap()
	if j := jobView(t, tr, "every"); j.ConsecutiveMissed != 0 || j.Missed != 0 {
		t.Fatalf("an every: job: consecutive missed %d, missed %d", j.ConsecutiveMissed, j.Missed)
	}
}

// TestSlotsCatchUp: cron runs a fixed-time job once for each of its times a
// jump forward skipped, right after the jump; those runs share one slot of
// that multiplicity and are not duplicates.
func TestSlotsCatchUp(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		x, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	type want struct{ missed, unexpected, overlap, double uint64 }
	cases := []struct {
		name   string
		expr   string
		events []Event
		want   want
	}{
		{"two catch-up runs at 03:00 are the slot's two runs", "15,45 2 * * *", []Event{
			start("j", "a", 1, at("2027-03-27T02:45:00+01:00")), end("j", "a", 1, at("2027-03-27T02:45:02+01:00"), Success),
			start("j", "a", 2, at("2027-03-28T03:00:00+02:00")), end("j", "a", 2, at("2027-03-28T03:00:02+02:00"), Success),
			start("j", "a", 3, at("2027-03-28T03:00:10+02:00")), end("j", "a", 3, at("2027-03-28T03:00:12+02:00"), Success),
			start("j", "a", 4, at("2027-03-29T02:15:00+02:00")),
		}, want{}},
		{"a third run at 03:00 is a double trigger", "15,45 2 * * *", []Event{
			start("j", "a", 1, at("2027-03-28T03:00:00+02:00")), end("j", "a", 1, at("2027-03-28T03:00:02+02:00"), Success),
			start("j", "a", 2, at("2027-03-28T03:00:10+02:00")), end("j", "a", 2, at("2027-03-28T03:00:12+02:00"), Success),
			start("j", "a", 3, at("2027-03-28T03:00:20+02:00")), end("j", "a", 3, at("2027-03-28T03:00:22+02:00"), Success),
		}, want{double: 1}},
		{"catch-up runs that overlap are expected", "0-59/10 2 * * *", []Event{
			start("j", "a", 1, at("2027-03-28T03:00:00+02:00")),
			start("j", "a", 2, at("2027-03-28T03:00:10+02:00")),
			start("j", "a", 3, at("2027-03-28T03:00:20+02:00")),
			start("j", "a", 4, at("2027-03-28T03:00:30+02:00")),
			start("j", "a", 5, at("2027-03-28T03:00:40+02:00")),
			start("j", "a", 6, at("2027-03-28T03:00:50+02:00")),
			start("j", "a", 7, at("2027-03-28T03:00:55+02:00")),
		}, want{overlap: 1}},
		{"a catch-up slot without runs is missed as often as it runs", "15,45 2 * * *", []Event{
			start("j", "a", 1, at("2027-03-27T02:45:00+01:00")),
			start("j", "a", 2, at("2027-03-29T02:15:00+02:00")),
		}, want{missed: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := schedule.ParseCron(tc.expr, berlin, schedule.Debian)
			if err != nil {
				t.Fatal(err)
			}
			clock := &fakeClock{now: at("2027-03-29T12:00:00Z")}
			tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
			tr.Configure([]JobSpec{{Name: "j", Schedule: s, Grace: 5 * time.Minute, Scope: "host", StaleMultiple: 2}},
				[]SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
			tr.SetHealth("runs", true, nil)
			tr.Apply(Batch{Source: "runs", Events: tc.events})
			j := jobView(t, tr, "j")
			got := want{j.Missed, j.Unexpected, j.DupCounts[0], j.DupCounts[1]}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestPersistentTimer: a Persistent= timer runs an elapse missed while the
// host was off at once after boot, late; that run is the last missed
// elapse's, not unexpected, and the earlier elapses of the stretch stay
// missed. Without persistent: the catch-up is unexpected, every elapse
// missed.
func TestPersistentTimer(t *testing.T) {
	day := func(d, h int) time.Time { return time.Date(2026, 11, 20+d, h, 0, 10, 0, time.UTC) }
	events := []Event{
		start("daily", "a", 1, day(1, 0)), end("daily", "a", 1, day(1, 0).Add(time.Minute), Success),
		// Off over day 2's midnight; booted at 08:00, the catch-up.
		start("daily", "a", 2, day(2, 8)), end("daily", "a", 2, day(2, 8).Add(time.Minute), Success),
		// Off for days 3 and 4; one catch-up for both, on day 4.
		start("daily", "a", 3, day(4, 9)), end("daily", "a", 3, day(4, 9).Add(time.Minute), Success),
		// A second run in day 4's window: the timer ran it by hand, say.
		start("daily", "a", 4, day(4, 15)), end("daily", "a", 4, day(4, 15).Add(time.Minute), Success),
	}
	for _, tc := range []struct {
		persistent         bool
		missed, unexpected uint64
	}{
		{true, 1, 1},  // day 3; the second run of day 4
		{false, 4, 3}, // days 2, 3, 4 and 5; every late run
	} {
		clock := &fakeClock{now: day(5, 12)}
		tr := New(Options{Host: "here", Now: clock.Now, StartupHold: NoStartupHold, Alive: func(int) bool { return true }})
		tr.Configure([]JobSpec{{Name: "daily", Schedule: grid{24 * time.Hour}, Grace: time.Minute, Persistent: tc.persistent, StaleMultiple: 2}},
			[]SourceSpec{{Name: "runs", Type: "runlog", Runs: true}})
		tr.Apply(Batch{Source: "runs", AtEnd: true, Events: events})
		clock.Advance(time.Second)
		tr.Reap()
		j := jobView(t, tr, "daily")
		if j.Missed != tc.missed || j.Unexpected != tc.unexpected || j.DupCounts != [3]uint64{} {
			t.Errorf("persistent %v: missed %d, unexpected %d, duplicates %v; want %d, %d, none",
				tc.persistent, j.Missed, j.Unexpected, j.DupCounts, tc.missed, tc.unexpected)
		}
		// Day 5's elapse has no run yet: a Persistent= timer may still
		// catch it up until day 6's.
		if want := map[bool]uint64{true: 0, false: 1}[tc.persistent]; j.ConsecutiveMissed != want {
			t.Errorf("persistent %v: consecutive missed %d, want %d", tc.persistent, j.ConsecutiveMissed, want)
		}
	}
}
