package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/journaltest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
	"github.com/jobwatch/jobwatch/sources"
)

// jSink records what a source hands it, and tells notes of each batch
// when notes is set.
type jSink struct {
	mu      sync.Mutex
	batches []model.Batch
	health  []jHealthCall
	notes   chan<- jNote
}

// jNote is what TestJournalAtEnd follows: a journalctl started, or a batch.
type jNote struct {
	what   string // "catch-up", "follow" or "batch"
	events int
	atEnd  bool
}

type jHealthCall struct {
	up  bool
	err error
}

func (s *jSink) Apply(b model.Batch) {
	s.mu.Lock()
	b.Events = append([]model.Event(nil), b.Events...)
	s.batches = append(s.batches, b)
	s.mu.Unlock()
	if s.notes != nil {
		s.notes <- jNote{what: "batch", events: len(b.Events), atEnd: b.AtEnd}
	}
}

func (s *jSink) SetHealth(_ string, up bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.health = append(s.health, jHealthCall{up, err})
}

func (s *jSink) events() []model.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var jEvs []model.Event
	for _, b := range s.batches {
		jEvs = append(jEvs, b.Events...)
	}
	return jEvs
}

func (s *jSink) totals() (parseErrors, resets int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.batches {
		parseErrors += b.ParseErrors
		resets += b.PositionResets
	}
	return
}

func (s *jSink) position() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p json.RawMessage
	for _, b := range s.batches {
		if b.Position != nil {
			p = b.Position
		}
	}
	return p
}

func (s *jSink) lastHealth() (jHealthCall, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.health) == 0 {
		return jHealthCall{}, false
	}
	return s.health[len(s.health)-1], true
}

// jSettled waits until the sink holds at least n events and the source
// has read the journal to its end while following it: the catch-up pass
// said AtEnd, so has the follower since (its output paused after the entry
// at the saved cursor and whatever came after it), and the last batch says
// AtEnd. An entry handed over twice, or an event made of nothing, would
// have been handed over by then: this is how a test knows nothing more
// will come.
func jSettled(t *testing.T, sink *jSink, n int, timeout time.Duration, what string) {
	t.Helper()
	testproc.WaitUntil(t, timeout, what+", and the follower at the journal's end", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		events, atEnds := 0, 0
		for _, b := range sink.batches {
			events += len(b.Events)
			if b.AtEnd {
				atEnds++
			}
		}
		return events >= n && atEnds >= 2 && sink.batches[len(sink.batches)-1].AtEnd
	})
}

func needJournalTools(t testing.TB) {
	t.Helper()
	testproc.SkipShort(t, "systemd-journal-remote and journalctl")
	if _, err := journaltest.RemoteBinary(); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("journalctl"); err != nil {
		t.Fatal("journalctl not found: install the Debian package systemd")
	}
}

var jUnits = map[string]string{"stats.service": "stats", "backup.service": "backup"}

func newJTestJournal(t testing.TB, dir string, cron []CronMatch) *Source {
	t.Helper()
	name := "systemd"
	src := Config{Directory: dir, Units: jUnits, Cron: cron}
	logger := slog.New(slog.NewTextHandler(jLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	j, err := New(name, src, sources.Deps{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	j.pause = 20 * time.Millisecond
	j.backoffMin = 50 * time.Millisecond
	j.backoffMax = 200 * time.Millisecond
	return j
}

type jLogWriter struct{ t testing.TB }

func (w jLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// jRun runs j until the returned stop is called (or the test ends).
func jRun(t *testing.T, j *Source, from json.RawMessage, sink sources.Sink) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx, from, sink) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err, ok := testproc.Within(done, 10*time.Second); !ok {
				t.Error("Run did not return after cancel")
			} else if err != nil {
				t.Errorf("Run returned %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

var (
	jBase  = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	jBoot0 = jBase.Add(-10 * time.Hour)
)

func jAt(sec int) time.Time { return jBase.Add(time.Duration(sec) * time.Second) }

func jSuccessRun(h *journaltest.Host, unit, inv string, t0 int, pid int) []journaltest.Entry {
	return []journaltest.Entry{
		h.Starting(jAt(t0), unit, inv),
		h.Logger(jAt(t0+1), unit, inv, pid+1, "a child logs through syslog"),
		h.Output(jAt(t0+2), unit, inv, pid, "working"),
		h.Deactivated(jAt(t0+3), unit, inv),
		h.Finished(jAt(t0+3), unit, inv),
		h.Consumed(jAt(t0+3), unit, inv),
	}
}

func jFailingRun(h *journaltest.Host, unit, inv string, t0 int, pid int) []journaltest.Entry {
	return []journaltest.Entry{
		h.Starting(jAt(t0), unit, inv),
		h.Output(jAt(t0+1), unit, inv, pid, "error: bad argument"),
		h.ProcessExit(jAt(t0+2), unit, inv, "exited", 2, "INVALIDARGUMENT"),
		h.FailureResult(jAt(t0+2), unit, inv, "exit-code"),
		h.FailedJob(jAt(t0+2), unit, inv),
		h.Consumed(jAt(t0+2), unit, inv),
	}
}

func jTimeoutRun(h *journaltest.Host, unit, inv string, t0 int, pid int) []journaltest.Entry {
	return []journaltest.Entry{
		h.Starting(jAt(t0), unit, inv),
		h.Output(jAt(t0+1), unit, inv, pid, "still working"),
		h.TimedOut(jAt(t0+90), unit, inv),
		h.ProcessExit(jAt(t0+90), unit, inv, "killed", 15, "TERM"),
		h.FailureResult(jAt(t0+90), unit, inv, "timeout"),
		h.FailedJob(jAt(t0+90), unit, inv),
	}
}

func jConcat(parts ...[]journaltest.Entry) []journaltest.Entry {
	var all []journaltest.Entry
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// jEv is an event in a comparable form.
func jEv(e model.Event) string {
	s := fmt.Sprintf("%s %s %s host=%s pid=%d run=%s", e.Time.UTC().Format("15:04:05"), e.Kind, e.Job, e.Host, e.PID, e.RunID)
	if e.Kind == model.End {
		s += " " + string(e.Result)
		if e.HasExitCode {
			s += fmt.Sprintf(" exit=%d", e.ExitCode)
		}
		if e.HasDuration {
			s += " took=" + e.Duration.String()
		}
	}
	return s
}

func jEvs(events []model.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = jEv(e)
	}
	return out
}

func jCompare(t *testing.T, got []model.Event, want []string) {
	t.Helper()
	g := jEvs(got)
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n got:\n  %s\nwant:\n  %s", strings.Join(g, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestJournalCatchUp reads real journal files built from each scenario.
func TestJournalCatchUp(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	inv := journaltest.InvocationID
	cron := []CronMatch{{Match: `/usr/local/bin/stats\.sh`, Job: "stats"}}
	tests := []struct {
		name    string
		entries []journaltest.Entry
		want    []string
	}{
		{
			name:    "successful timer run",
			entries: jSuccessRun(h, "stats.service", inv("s1"), 0, 4242),
			want: []string{
				"10:00:00 start stats host=web1 pid=4242 run=" + inv("s1"),
				"10:00:03 end stats host=web1 pid=4242 run=" + inv("s1") + " success took=3s",
			},
		},
		{
			name:    "failing run with exit status 2",
			entries: jFailingRun(h, "stats.service", inv("f1"), 0, 4300),
			want: []string{
				"10:00:00 start stats host=web1 pid=4300 run=" + inv("f1"),
				"10:00:02 end stats host=web1 pid=4300 run=" + inv("f1") + " failure exit=2 took=2s",
			},
		},
		{
			name:    "timeout",
			entries: jTimeoutRun(h, "stats.service", inv("t1"), 0, 4400),
			want: []string{
				"10:00:00 start stats host=web1 pid=4400 run=" + inv("t1"),
				"10:01:30 end stats host=web1 pid=4400 run=" + inv("t1") + " timeout took=1m30s",
			},
		},
		{
			name: "two units interleaved",
			entries: []journaltest.Entry{
				h.Starting(jAt(0), "stats.service", inv("a")),
				h.Starting(jAt(1), "backup.service", inv("b")),
				h.Output(jAt(2), "backup.service", inv("b"), 600, "copying"),
				h.Output(jAt(2), "stats.service", inv("a"), 500, "counting"),
				h.Deactivated(jAt(3), "stats.service", inv("a")),
				h.Finished(jAt(3), "stats.service", inv("a")),
				h.ProcessExit(jAt(5), "backup.service", inv("b"), "exited", 1, "FAILURE"),
				h.FailureResult(jAt(5), "backup.service", inv("b"), "exit-code"),
				h.FailedJob(jAt(5), "backup.service", inv("b")),
				// Another unit's run is not asked for.
				h.Starting(jAt(6), "other.service", inv("o")),
				h.Deactivated(jAt(7), "other.service", inv("o")),
			},
			want: []string{
				"10:00:00 start stats host=web1 pid=500 run=" + inv("a"),
				"10:00:01 start backup host=web1 pid=600 run=" + inv("b"),
				"10:00:03 end stats host=web1 pid=500 run=" + inv("a") + " success took=3s",
				"10:00:05 end backup host=web1 pid=600 run=" + inv("b") + " failure exit=1 took=4s",
			},
		},
		{
			name: "cron run and timer run of the same job overlap",
			entries: []journaltest.Entry{
				h.Cron(jAt(0), 5000, "(root) CMD (/usr/local/bin/stats.sh --full)"),
				h.Cron(jAt(1), 5100, "(root) CMD (/usr/bin/unrelated)"),
				h.Starting(jAt(10), "stats.service", inv("o1")),
				h.Output(jAt(11), "stats.service", inv("o1"), 700, "counting"),
				h.Deactivated(jAt(20), "stats.service", inv("o1")),
				h.Finished(jAt(20), "stats.service", inv("o1")),
				h.Cron(jAt(2), 5100, "(root) END (/usr/bin/unrelated)"),
				h.Cron(jAt(30), 5000, "(root) END (/usr/local/bin/stats.sh --full)"),
				h.Cron(jAt(60), 5201, "(root) CMD (/usr/local/bin/stats.sh)"), // -L 7: the job logs its CMD line
				h.Cron(jAt(65), 5200, "(CRON) error (grandchild #5201 failed with exit status 3)"),
				h.Cron(jAt(65), 5200, "(root) END (/usr/local/bin/stats.sh)"),
			},
			want: []string{
				"10:00:00 start stats host=web1 pid=5000 run=cron:web1:5000",
				"10:00:10 start stats host=web1 pid=700 run=" + inv("o1"),
				"10:00:20 end stats host=web1 pid=700 run=" + inv("o1") + " success took=10s",
				"10:00:30 end stats host=web1 pid=5000 run=cron:web1:5000 success took=30s",
				"10:01:00 start stats host=web1 pid=5201 run=cron:web1:5201",
				"10:01:05 end stats host=web1 pid=5201 run=cron:web1:5201 failure exit=3 took=5s",
			},
		},
		{
			name: "odd but valid entries",
			entries: func() []journaltest.Entry {
				noInv := h.Starting(jAt(0), "stats.service", "")
				huge := h.Output(jAt(1), "stats.service", "", 800, strings.Repeat("x", 200000))
				binary := h.Cron(jAt(2), 5300, "(root) CMD (/usr/local/bin/stats.sh \x01binary)")
				odd := h.Deactivated(jAt(3), "stats.service", "")
				odd.Add("MESSAGE_ID", "00000000000000000000000000000001") // a second MESSAGE_ID: the first counts
				unknown := h.Starting(jAt(3), "stats.service", inv("u"))
				unknown.Set("MESSAGE_ID", "ffffffffffffffffffffffffffffffff")
				hugeUnit := h.FailureResult(jAt(4), "backup.service", inv("never-started"), "signal")
				hugeUnit.Add("COREDUMP", strings.Repeat("\x00\x01", 100000))
				return []journaltest.Entry{noInv, huge, binary, odd, unknown, hugeUnit}
			}(),
			want: []string{
				"10:00:00 start stats host=web1 pid=800 run=stats.service@web1",
				"10:00:02 start stats host=web1 pid=5300 run=cron:web1:5300",
				"10:00:03 end stats host=web1 pid=800 run=stats.service@web1 success took=3s",
				"10:00:04 end backup host=web1 pid=0 run=" + inv("never-started") + " failure",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := journaltest.Append(filepath.Join(dir, "system.journal"), tc.entries); err != nil {
				t.Fatal(err)
			}
			sink := &jSink{}
			stop := jRun(t, newJTestJournal(t, dir, cron), nil, sink)
			jSettled(t, sink, len(tc.want), 10*time.Second, "events")
			stop()
			jCompare(t, sink.events(), tc.want)
			if pe, resets := sink.totals(); pe != 0 || resets != 0 {
				t.Errorf("parse errors %d, position resets %d; want 0, 0", pe, resets)
			}
			if hc, ok := sink.lastHealth(); !ok || !hc.up {
				t.Errorf("health = %+v, want up", hc)
			}
		})
	}
}

// TestJournalRestart stops the source between a run's start and its end and
// starts a new one from the saved position: nothing is repeated or lost, and
// the duration comes from the start seen before the restart.
func TestJournalRestart(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	inv := journaltest.InvocationID
	dir := t.TempDir()
	file := filepath.Join(dir, "system.journal")
	if err := journaltest.Append(file, []journaltest.Entry{
		h.Starting(jAt(0), "stats.service", inv("r1")),
		h.Output(jAt(1), "stats.service", inv("r1"), 900, "started"),
	}); err != nil {
		t.Fatal(err)
	}
	sink1 := &jSink{}
	stop := jRun(t, newJTestJournal(t, dir, nil), nil, sink1)
	testproc.WaitUntil(t, 10*time.Second, "start", func() bool { return len(sink1.events()) == 1 })
	stop()
	pos := sink1.position()
	jCompare(t, sink1.events(), []string{"10:00:00 start stats host=web1 pid=900 run=" + inv("r1")})

	if err := journaltest.Append(file, jConcat(
		[]journaltest.Entry{h.Deactivated(jAt(7), "stats.service", inv("r1"))},
		jSuccessRun(h, "stats.service", inv("r2"), 60, 950),
	)); err != nil {
		t.Fatal(err)
	}
	sink2 := &jSink{}
	jRun(t, newJTestJournal(t, dir, nil), pos, sink2)
	want := []string{
		"10:00:07 end stats host=web1 pid=900 run=" + inv("r1") + " success took=7s",
		"10:01:00 start stats host=web1 pid=950 run=" + inv("r2"),
		"10:01:03 end stats host=web1 pid=950 run=" + inv("r2") + " success took=3s",
	}
	jSettled(t, sink2, len(want), 10*time.Second, "events after restart")
	jCompare(t, sink2.events(), want)
	if _, resets := sink2.totals(); resets != 0 {
		t.Errorf("position resets %d, want 0", resets)
	}
}

// TestJournalVacuumedCursor: the file holding the saved cursor is deleted
// (vacuumed) while jobwatch is stopped. Reading goes on from the first
// surviving entry (not dropping it, as --after-cursor would), counts one
// position reset, and replays nothing.
func TestJournalVacuumedCursor(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	inv := journaltest.InvocationID
	dir := t.TempDir()
	old := filepath.Join(dir, "system@old.journal")
	if err := journaltest.Append(old, jConcat(
		jSuccessRun(h, "stats.service", inv("v1"), 0, 100),
		[]journaltest.Entry{h.Starting(jAt(50), "backup.service", inv("v2"))},
	)); err != nil {
		t.Fatal(err)
	}
	sink1 := &jSink{}
	stop := jRun(t, newJTestJournal(t, dir, nil), nil, sink1)
	testproc.WaitUntil(t, 10*time.Second, "first runs", func() bool { return len(sink1.events()) == 3 })
	stop()

	// The newer file: the end of the open run, then another run. Then the
	// old file is vacuumed.
	if err := journaltest.Append(filepath.Join(dir, "system.journal"), jConcat(
		[]journaltest.Entry{h.Deactivated(jAt(55), "backup.service", inv("v2"))},
		jFailingRun(h, "stats.service", inv("v3"), 100, 200),
	)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(old); err != nil {
		t.Fatal(err)
	}
	sink2 := &jSink{}
	jRun(t, newJTestJournal(t, dir, nil), sink1.position(), sink2)
	want := []string{
		"10:00:55 end backup host=web1 pid=0 run=" + inv("v2") + " success took=5s",
		"10:01:40 start stats host=web1 pid=200 run=" + inv("v3"),
		"10:01:42 end stats host=web1 pid=200 run=" + inv("v3") + " failure exit=2 took=2s",
	}
	jSettled(t, sink2, len(want), 10*time.Second, "events after vacuum")
	jCompare(t, sink2.events(), want)
	if _, resets := sink2.totals(); resets != 1 {
		t.Errorf("position resets %d, want 1", resets)
	}
}

// TestJournalForeignCursor: the saved cursor comes from another journal
// holding the same runs (a copy, a rebuilt machine). journalctl replays from
// the start; runs already ended are not reported again.
func TestJournalForeignCursor(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	inv := journaltest.InvocationID
	runs := jConcat(jSuccessRun(h, "stats.service", inv("x1"), 0, 10), jFailingRun(h, "backup.service", inv("x2"), 10, 20))
	dirA, dirB := t.TempDir(), t.TempDir()
	if err := journaltest.Append(filepath.Join(dirA, "system.journal"), runs); err != nil {
		t.Fatal(err)
	}
	sink1 := &jSink{}
	stop := jRun(t, newJTestJournal(t, dirA, nil), nil, sink1)
	testproc.WaitUntil(t, 10*time.Second, "runs", func() bool { return len(sink1.events()) == 4 })
	stop()

	// An entry earlier than the saved time too, as a differently merged journal has.
	early := jSuccessRun(h, "stats.service", inv("x0"), -100, 5)
	if err := journaltest.Append(filepath.Join(dirB, "system.journal"), jConcat(early, runs, jSuccessRun(h, "stats.service", inv("x3"), 100, 30))); err != nil {
		t.Fatal(err)
	}
	sink2 := &jSink{}
	jRun(t, newJTestJournal(t, dirB, nil), sink1.position(), sink2)
	want := []string{
		"10:01:40 start stats host=web1 pid=30 run=" + inv("x3"),
		"10:01:43 end stats host=web1 pid=30 run=" + inv("x3") + " success took=3s",
	}
	jSettled(t, sink2, len(want), 10*time.Second, "new run")
	jCompare(t, sink2.events(), want)
	if _, resets := sink2.totals(); resets != 1 {
		t.Errorf("position resets %d, want 1", resets)
	}
}

// TestJournalFollow appends entries while the source follows the journal,
// also into a new file (rotation), and expects them within 2 s.
func TestJournalFollow(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	inv := journaltest.InvocationID
	dir := t.TempDir()
	file := filepath.Join(dir, "system.journal")
	if err := journaltest.Append(file, jSuccessRun(h, "stats.service", inv("l1"), 0, 10)); err != nil {
		t.Fatal(err)
	}
	sink := &jSink{}
	jRun(t, newJTestJournal(t, dir, []CronMatch{{Match: `stats`, Job: "stats"}}), nil, sink)
	// Caught up, and journalctl --follow at the end of the journal: what
	// is appended now reaches the source through the follower.
	jSettled(t, sink, 2, 10*time.Second, "catch-up")

	steps := []struct {
		name    string
		file    string
		entries []journaltest.Entry
		total   int
	}{
		{"append to the same file", file, jSuccessRun(h, "stats.service", inv("l2"), 60, 20), 4},
		{"cron line", file, []journaltest.Entry{h.Cron(jAt(100), 3000, "(root) CMD (stats)")}, 5},
		{"rotated: a new file", filepath.Join(dir, "system@0001.journal"), jFailingRun(h, "backup.service", inv("l3"), 120, 30), 7},
		{"rotated again", filepath.Join(dir, "system@0002.journal"), []journaltest.Entry{h.Cron(jAt(130), 3000, "(root) END (stats)")}, 8},
	}
	for _, st := range steps {
		began := time.Now()
		if err := journaltest.Append(st.file, st.entries); err != nil {
			t.Fatal(err)
		}
		testproc.WaitUntil(t, 2*time.Second, st.name, func() bool { return len(sink.events()) >= st.total })
		t.Logf("%s: delivered after %v", st.name, time.Since(began))
	}
	jSettled(t, sink, 8, 10*time.Second, "every step's events")
	jCompare(t, sink.events(), []string{
		"10:00:00 start stats host=web1 pid=10 run=" + inv("l1"),
		"10:00:03 end stats host=web1 pid=10 run=" + inv("l1") + " success took=3s",
		"10:01:00 start stats host=web1 pid=20 run=" + inv("l2"),
		"10:01:03 end stats host=web1 pid=20 run=" + inv("l2") + " success took=3s",
		"10:01:40 start stats host=web1 pid=3000 run=cron:web1:3000",
		"10:02:00 start backup host=web1 pid=30 run=" + inv("l3"),
		"10:02:02 end backup host=web1 pid=30 run=" + inv("l3") + " failure exit=2 took=2s",
		"10:02:10 end stats host=web1 pid=3000 run=cron:web1:3000 success took=30s",
	})
}

// TestJournalFollowerKilled: journalctl --follow dies; the source restarts it
// from the saved cursor, repeating and losing nothing.
func TestJournalFollowerKilled(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	inv := journaltest.InvocationID
	dir := t.TempDir()
	file := filepath.Join(dir, "system.journal")
	if err := journaltest.Append(file, jSuccessRun(h, "stats.service", inv("k1"), 0, 10)); err != nil {
		t.Fatal(err)
	}
	followers := make(chan int, 10)
	j := newJTestJournal(t, dir, nil)
	j.started = func(pid int, follow bool) {
		if follow {
			followers <- pid
		}
	}
	sink := &jSink{}
	jRun(t, j, nil, sink)
	pid := testproc.Receive(t, followers, 10*time.Second, "journalctl --follow to start")
	jSettled(t, sink, 2, 10*time.Second, "the first run") // the follower at the journal's end
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := journaltest.Append(file, []journaltest.Entry{h.Starting(jAt(60), "stats.service", inv("k2"))}); err != nil {
		t.Fatal(err)
	}
	testproc.Receive(t, followers, 10*time.Second, "journalctl --follow to be restarted")
	if err := journaltest.Append(file, []journaltest.Entry{h.Deactivated(jAt(70), "stats.service", inv("k2"))}); err != nil {
		t.Fatal(err)
	}
	jSettled(t, sink, 4, 5*time.Second, "runs")
	jCompare(t, sink.events(), []string{
		"10:00:00 start stats host=web1 pid=10 run=" + inv("k1"),
		"10:00:03 end stats host=web1 pid=10 run=" + inv("k1") + " success took=3s",
		"10:01:00 start stats host=web1 pid=0 run=" + inv("k2"),
		"10:01:10 end stats host=web1 pid=0 run=" + inv("k2") + " success took=10s",
	})
}

// TestJournalHealth: a missing directory or journalctl binary makes the
// source unhealthy; it recovers by itself when the journal appears.
func TestJournalHealth(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	inv := journaltest.InvocationID

	t.Run("journalctl missing", func(t *testing.T) {
		j := newJTestJournal(t, t.TempDir(), nil)
		j.journalctl = filepath.Join(t.TempDir(), "journalctl")
		sink := &jSink{}
		jRun(t, j, nil, sink)
		testproc.WaitUntil(t, 5*time.Second, "unhealthy", func() bool { hc, ok := sink.lastHealth(); return ok && !hc.up && hc.err != nil })
	})

	t.Run("directory gone, then back", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "journal")
		sink := &jSink{}
		jRun(t, newJTestJournal(t, dir, nil), nil, sink)
		testproc.WaitUntil(t, 5*time.Second, "unhealthy", func() bool { hc, ok := sink.lastHealth(); return ok && !hc.up })
		if err := journaltest.Append(filepath.Join(dir, "system.journal"), jSuccessRun(h, "stats.service", inv("h1"), 0, 10)); err != nil {
			t.Fatal(err)
		}
		testproc.WaitUntil(t, 5*time.Second, "healthy with events", func() bool {
			hc, ok := sink.lastHealth()
			return ok && hc.up && len(sink.events()) == 2
		})
	})

	// A container without journald: a journal directory with no journal
	// file in it. journalctl reads nothing there and exits 0, and its
	// follower fails ("No such boot ID"): the source is down, saying why,
	// until a journal file appears.
	t.Run("no journal files, then a journal", func(t *testing.T) {
		dir := t.TempDir()
		sink := &jSink{}
		jRun(t, newJTestJournal(t, dir, nil), nil, sink)
		testproc.WaitUntil(t, 5*time.Second, "down", func() bool { hc, ok := sink.lastHealth(); return ok && !hc.up })
		if hc, _ := sink.lastHealth(); hc.err == nil || !strings.Contains(hc.err.Error(), "no journal files in "+dir) {
			t.Errorf("health error %v, want it to say there are no journal files in %s", hc.err, dir)
		}
		sink.mu.Lock()
		for _, hc := range sink.health {
			if hc.up {
				t.Error("the source was reported up with no journal to read")
			}
		}
		sink.mu.Unlock()
		if err := journaltest.Append(filepath.Join(dir, "system.journal"), jSuccessRun(h, "stats.service", inv("n1"), 0, 10)); err != nil {
			t.Fatal(err)
		}
		testproc.WaitUntil(t, 5*time.Second, "up with the journal's run", func() bool {
			hc, ok := sink.lastHealth()
			return ok && hc.up && len(sink.events()) == 2
		})
	})

	// The system journal where journald keeps none: down, naming where it
	// looked.
	t.Run("no system journal", func(t *testing.T) {
		src := Config{Units: jUnits}
		j, err := New("systemd", src, sources.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		j.backoffMin, j.backoffMax = 50*time.Millisecond, 200*time.Millisecond
		empty := []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")}
		j.systemDirs = empty
		sink := &jSink{}
		jRun(t, j, nil, sink)
		testproc.WaitUntil(t, 5*time.Second, "down", func() bool { hc, ok := sink.lastHealth(); return ok && !hc.up })
		if hc, _ := sink.lastHealth(); hc.err == nil || !strings.Contains(hc.err.Error(), "no journal files in "+empty[0]+" or "+empty[1]) {
			t.Errorf("health error %v, want it to name the journal directories", hc.err)
		}
	})

	t.Run("unreadable journal file", func(t *testing.T) {
		if os.Getuid() == 0 {
			// root reads every file; run as nobody through setpriv if possible.
			if _, err := exec.LookPath("setpriv"); err != nil {
				t.Skip("needs setpriv (util-linux) to drop root")
			}
		}
		dir := t.TempDir()
		if err := journaltest.Append(filepath.Join(dir, "system.journal"), jSuccessRun(h, "stats.service", inv("p1"), 0, 10)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, "system.journal"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{dir, filepath.Dir(dir)} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		j := newJTestJournal(t, dir, nil)
		if os.Getuid() == 0 {
			wrapper := filepath.Join(t.TempDir(), "journalctl-as-nobody")
			script := "#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups journalctl \"$@\"\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			j.journalctl = wrapper
		}
		sink := &jSink{}
		jRun(t, j, nil, sink)
		testproc.WaitUntil(t, 5*time.Second, "unhealthy", func() bool { hc, ok := sink.lastHealth(); return ok && !hc.up })
		hc, _ := sink.lastHealth()
		if !strings.Contains(strings.ToLower(hc.err.Error()), "permission") {
			t.Errorf("health error %q does not name permissions", hc.err)
		}
	})
}

// TestJournalBatches: catch-up hands over a few large batches, not one per entry.
func TestJournalBatches(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	var entries []journaltest.Entry
	for i := range 700 {
		entries = append(entries, jSuccessRun(h, "stats.service", journaltest.InvocationID(fmt.Sprint("b", i)), i*10, 100+i)...)
	}
	dir := t.TempDir()
	if err := journaltest.Append(filepath.Join(dir, "system.journal"), entries); err != nil {
		t.Fatal(err)
	}
	sink := &jSink{}
	j := newJTestJournal(t, dir, nil)
	j.maxBatch = 1000
	jRun(t, j, nil, sink)
	testproc.WaitUntil(t, 20*time.Second, "all runs", func() bool { return len(sink.events()) == 1400 })
	sink.mu.Lock()
	n := len(sink.batches)
	sink.mu.Unlock()
	if n > 20 {
		t.Errorf("%d batches for %d entries", n, len(entries))
	}
	var p journalPosition
	if err := json.Unmarshal(sink.position(), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Ended) < j.maxEnded || len(p.Ended) > j.maxEnded*5/4 || p.Floor == 0 || len(p.Open) != 0 {
		t.Errorf("position keeps %d ended runs (floor %d) and %d open; want %d, >0, 0", len(p.Ended), p.Floor, len(p.Open), j.maxEnded)
	}
}

// TestJournalTrackerOverlap: a job run from cron and from its timer at the
// same time, through the real tracker: running 2, one overlap; after both
// end, two successful runs.
func TestJournalTrackerOverlap(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	inv := journaltest.InvocationID
	dir := t.TempDir()
	file := filepath.Join(dir, "system.journal")
	if err := journaltest.Append(file, []journaltest.Entry{
		h.Cron(jAt(0), 5000, "(root) CMD (/usr/local/bin/stats.sh)"),
		h.Starting(jAt(10), "stats.service", inv("ov")),
		h.Output(jAt(11), "stats.service", inv("ov"), 700, "counting"),
	}); err != nil {
		t.Fatal(err)
	}
	now := jAt(3600)
	tr := model.New(model.Options{StartupHold: model.NoStartupHold,
		Host:  "elsewhere", // no liveness checks of the fixture's PIDs
		Now:   func() time.Time { return now },
		Alive: func(int) bool { return true },
	})
	tr.Configure([]model.JobSpec{
		{Name: "stats", Schedule: schedule.Every(time.Hour), StaleMultiple: 2},
		{Name: "backup", Schedule: schedule.Every(24 * time.Hour), StaleMultiple: 2},
	}, []model.SourceSpec{{Name: "systemd", Type: Type}})
	view := func() model.JobView {
		jobs, _ := tr.View()
		for _, j := range jobs {
			if j.Spec.Name == "stats" {
				return j
			}
		}
		t.Fatal("job stats not in view")
		return model.JobView{}
	}
	jRun(t, newJTestJournal(t, dir, []CronMatch{{Match: `/usr/local/bin/stats\.sh`, Job: "stats"}}), nil, tr)
	testproc.WaitUntil(t, 10*time.Second, "two runs open", func() bool { return len(view().Open) == 2 })
	if v := view(); v.Overlaps != 1 {
		t.Errorf("overlaps %d, want 1", v.Overlaps)
	}
	if err := journaltest.Append(file, []journaltest.Entry{
		h.Deactivated(jAt(20), "stats.service", inv("ov")),
		h.Finished(jAt(20), "stats.service", inv("ov")),
		h.Cron(jAt(30), 5000, "(root) END (/usr/local/bin/stats.sh)"),
	}); err != nil {
		t.Fatal(err)
	}
	testproc.WaitUntil(t, 5*time.Second, "both runs ended", func() bool { return view().RunCounts[0] == 2 })
	v := view()
	if len(v.Open) != 0 || v.Overlaps != 1 || !v.LastSuccess.Equal(jAt(30)) {
		t.Errorf("open %d, overlaps %d, last success %v; want 0, 1, %v", len(v.Open), v.Overlaps, v.LastSuccess, jAt(30))
	}
	_, srcs := tr.View()
	if len(srcs) != 1 || !srcs[0].Up || srcs[0].Position == nil {
		t.Errorf("source view %+v: want up with a position", srcs)
	}
}

// TestJournalOlderBoot: the saved cursor is from an earlier boot, and
// entries of that boot come after it. journalctl --follow shows only the
// current boot, so catching up runs without --follow first.
func TestJournalOlderBoot(t *testing.T) {
	needJournalTools(t)
	old := journaltest.NewHost("web1", jBoot0.Add(-24*time.Hour))
	old.BootID = "0123456789abcdef0123456789abcdef"
	cur := journaltest.NewHost("web1", jBoot0)
	inv := journaltest.InvocationID
	dir := t.TempDir()
	if err := journaltest.Append(filepath.Join(dir, "system@old.journal"), []journaltest.Entry{
		old.Starting(jAt(-3600), "stats.service", inv("ob1")),
	}); err != nil {
		t.Fatal(err)
	}
	sink1 := &jSink{}
	stop := jRun(t, newJTestJournal(t, dir, nil), nil, sink1)
	testproc.WaitUntil(t, 10*time.Second, "start", func() bool { return len(sink1.events()) == 1 })
	stop()
	if err := journaltest.Append(filepath.Join(dir, "system@old.journal"), []journaltest.Entry{
		old.FailureResult(jAt(-3500), "stats.service", inv("ob1"), "exit-code"),
		old.Starting(jAt(-3000), "backup.service", inv("ob2")),
		old.Deactivated(jAt(-2990), "backup.service", inv("ob2")),
	}); err != nil {
		t.Fatal(err)
	}
	if err := journaltest.Append(filepath.Join(dir, "system.journal"), jSuccessRun(cur, "stats.service", inv("cb1"), 0, 40)); err != nil {
		t.Fatal(err)
	}
	sink2 := &jSink{}
	jRun(t, newJTestJournal(t, dir, nil), sink1.position(), sink2)
	want := []string{
		"09:01:40 end stats host=web1 pid=0 run=" + inv("ob1") + " failure took=1m40s",
		"09:10:00 start backup host=web1 pid=0 run=" + inv("ob2"),
		"09:10:10 end backup host=web1 pid=0 run=" + inv("ob2") + " success took=10s",
		"10:00:00 start stats host=web1 pid=40 run=" + inv("cb1"),
		"10:00:03 end stats host=web1 pid=40 run=" + inv("cb1") + " success took=3s",
	}
	jSettled(t, sink2, len(want), 10*time.Second, "events")
	jCompare(t, sink2.events(), want)
}

func TestNewJournalPaths(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, _ := os.Getwd()
	name := "j"
	src := Config{Files: []string{"a.journal", "/abs/b.journal"}, Units: jUnits}
	j, err := New(name, src, sources.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--file=" + filepath.Join(wd, "a.journal"), "--file=/abs/b.journal"}
	if strings.Join(j.selector, " ") != strings.Join(want, " ") {
		t.Errorf("selector %q, want %q", j.selector, want)
	}
	if got := strings.Join(j.matches, " "); got != "UNIT=backup.service UNIT=stats.service + _SYSTEMD_UNIT=backup.service _SYSTEMD_UNIT=stats.service" {
		t.Errorf("matches %q", got)
	}
}

// TestJournalAtEnd: the source says AtEnd when it has handed over all the
// journal holds: at the end of a catch-up pass (journalctl exited cleanly),
// not on the batches before it, then each time the follower's output
// pauses with entries handed over; never while the journal is idle, nor
// while it cannot be read.
func TestJournalAtEnd(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	inv := journaltest.InvocationID
	// follow runs a source on dir, telling each journalctl it starts and
	// each batch.
	follow := func(t *testing.T, dir string, from json.RawMessage, journalctl string) (*jSink, func() jNote) {
		notes := make(chan jNote, 1000)
		sink := &jSink{notes: notes}
		j := newJTestJournal(t, dir, nil)
		j.maxBatch = 1000
		if journalctl != "" {
			j.journalctl = journalctl
		}
		j.started = func(_ int, follow bool) {
			n := jNote{what: "catch-up"}
			if follow {
				n.what = "follow"
			}
			notes <- n
		}
		next := func() jNote {
			t.Helper()
			return testproc.Receive(t, notes, 20*time.Second, "the source to hand something over")
		}
		jRun(t, j, from, sink)
		return sink, next
	}
	// catchUp reads the notes of a catch-up pass: batches without AtEnd,
	// then one with it. It returns how many events and batches there were.
	catchUp := func(t *testing.T, next func() jNote) (events, batches int) {
		t.Helper()
		if n := next(); n.what != "catch-up" {
			t.Fatalf("%+v, want journalctl started to catch up", n)
		}
		for {
			n := next()
			if n.what != "batch" {
				t.Fatalf("%+v during the catch-up pass", n)
			}
			events += n.events
			batches++
			if n.atEnd {
				return events, batches
			}
		}
	}
	// caughtUp reads the follower's start and its first batch, which
	// follows its output's first pause: the entry at the saved cursor,
	// dropped as read before.
	caughtUp := func(t *testing.T, next func() jNote) {
		t.Helper()
		if n := next(); n.what != "follow" {
			t.Fatalf("%+v, want journalctl --follow started", n)
		}
		if n := next(); n != (jNote{what: "batch", atEnd: true}) {
			t.Fatalf("first batch of the follower %+v, want AtEnd without events", n)
		}
	}

	t.Run("catch-up longer than a batch, then follow", func(t *testing.T) {
		var entries []journaltest.Entry
		for i := range 700 {
			entries = append(entries, jSuccessRun(h, "stats.service", inv(fmt.Sprint("e", i)), i*10, 100+i)...)
		}
		dir := t.TempDir()
		file := filepath.Join(dir, "system.journal")
		if err := journaltest.Append(file, entries); err != nil {
			t.Fatal(err)
		}
		sink, next := follow(t, dir, nil, "")
		events, batches := catchUp(t, next)
		if events != 1400 || batches < 3 {
			t.Fatalf("catch-up of %d entries: %d events in %d batches, want 1400 in at least 3 (batches of 1,000 to 1,511 lines)", len(entries), events, batches)
		}
		caughtUp(t, next)

		// Idle, the follower hands nothing over: the first batch after an
		// append has its entries.
		if err := journaltest.Append(file, jSuccessRun(h, "stats.service", inv("e-new"), 9000, 900)); err != nil {
			t.Fatal(err)
		}
		for events = 0; events < 2; {
			n := next()
			if n.what != "batch" || n.events == 0 || !n.atEnd {
				t.Fatalf("%+v after an append, want a batch of its events, AtEnd", n)
			}
			events += n.events
		}

		// Restarted from the saved position with nothing new: the catch-up
		// pass, which reads only the entry at the cursor, says AtEnd.
		_, next = follow(t, dir, sink.position(), "")
		if events, _ := catchUp(t, next); events != 0 {
			t.Errorf("%d events caught up again after a restart", events)
		}
		caughtUp(t, next)
	})

	t.Run("nothing to read", func(t *testing.T) {
		// A journal holding none of the source's entries, whose followers
		// exit at once, as journalctl --follow (systemd 252) does on a
		// journal without the current boot: each is restarted and catches
		// up again, which, with nothing read, says AtEnd no more. (With no
		// journal file at all the source is down: TestJournalHealth.)
		wrapper := filepath.Join(t.TempDir(), "journalctl")
		script := "#!/bin/sh\ncase \"$*\" in *--follow*) exit 1;; esac\nexec journalctl \"$@\"\n"
		if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := journaltest.Append(filepath.Join(dir, "system.journal"), []journaltest.Entry{h.Other(jAt(0), "sshd", 5, "unrelated")}); err != nil {
			t.Fatal(err)
		}
		_, next := follow(t, dir, nil, wrapper)
		if events, batches := catchUp(t, next); events != 0 || batches != 1 {
			t.Errorf("empty journal: %d events in %d batches, want one AtEnd batch", events, batches)
		}
		for catchUps := 0; catchUps < 3; {
			switch n := next(); n.what {
			case "catch-up":
				catchUps++
			case "batch":
				t.Fatalf("%+v: an empty journal handed a batch over again", n)
			}
		}
	})

	t.Run("directory missing, then there", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "journal")
		sink, next := follow(t, dir, nil, "")
		testproc.WaitUntil(t, 10*time.Second, "unhealthy", func() bool { hc, ok := sink.lastHealth(); return ok && !hc.up })
		// The directory appears with its journal whole: one written in
		// place exists, empty, before systemd-journal-remote has written
		// its entries, and a catch-up pass may read it then.
		ready := dir + ".new"
		if err := journaltest.Append(filepath.Join(ready, "system.journal"), jSuccessRun(h, "stats.service", inv("m1"), 0, 10)); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(ready, dir); err != nil {
			t.Fatal(err)
		}
		// Nothing was handed over while the directory was missing: the
		// first batch is the catch-up's.
		if events, _ := catchUp(t, next); events != 2 {
			t.Errorf("%d events, want 2", events)
		}
	})
}
