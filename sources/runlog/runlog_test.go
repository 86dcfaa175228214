package runlog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
	"github.com/jobwatch/jobwatch/sources"
	"github.com/jobwatch/jobwatch/sources/runlog/record"
	"github.com/jobwatch/jobwatch/sources/runlog/tail"
)

// healthSink is a real tracker that also remembers the health reports and
// the batches applied.
type healthSink struct {
	*model.Tracker
	mu      sync.Mutex
	health  []bool
	batches []batchNote
	taken   int // batches already returned by takeBatches
}

// batchNote is what a test checks of a batch applied.
type batchNote struct {
	events int
	atEnd  bool
}

func (h *healthSink) Apply(b model.Batch) {
	h.mu.Lock()
	h.batches = append(h.batches, batchNote{len(b.Events), b.AtEnd})
	h.mu.Unlock()
	h.Tracker.Apply(b)
}

// takeBatches returns the batches applied since the last call.
func (h *healthSink) takeBatches() []batchNote {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.batches[h.taken:]
	h.taken = len(h.batches)
	return out
}

func (h *healthSink) SetHealth(name string, up bool, err error) {
	h.mu.Lock()
	h.health = append(h.health, up)
	h.mu.Unlock()
	h.Tracker.SetHealth(name, up, err)
}

func (h *healthSink) lastHealth() (bool, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.health) == 0 {
		return false, 0
	}
	return h.health[len(h.health)-1], len(h.health)
}

func newSink(jobs ...string) *healthSink {
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "test-host", Now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }})
	var specs []model.JobSpec
	for _, j := range jobs {
		specs = append(specs, model.JobSpec{Name: j, Schedule: schedule.Every(time.Hour), StaleMultiple: 2})
	}
	tr.Configure(specs, []model.SourceSpec{{Name: "runs", Type: "runlog"}})
	return &healthSink{Tracker: tr}
}

// runStepped runs src until stop is called, stepping its tailer by hand.
func runStepped(t *testing.T, src *Source, sink sources.Sink) (step func(), stop func()) {
	t.Helper()
	w := tail.NewStepWaker()
	src.waker = w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, sink.(*healthSink).Position("runs"), sink) }()
	w.Idle()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return w.Step, stop
}

func newRunLog(t *testing.T, path, format string, patterns ...record.Pattern) *Source {
	t.Helper()
	cfg := Config{Path: path, Config: record.Config{Format: format, Patterns: patterns}}
	if format == "regex" {
		cfg.TimeFormat = "2006-01-02 15:04:05.000"
		cfg.Timezone = "Asia/Shanghai"
	}
	src, err := New("runs", cfg, sources.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}

func view(t *testing.T, tr *model.Tracker, job string) (model.JobView, model.SourceView) {
	t.Helper()
	jobs, srcs := tr.View()
	for _, j := range jobs {
		if j.Spec.Name == job {
			return j, srcs[0]
		}
	}
	t.Fatalf("no job %q", job)
	return model.JobView{}, model.SourceView{}
}

func TestRunLogJSONAndBadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.log")
	appendLines(t, path,
		`{"time":"2026-11-30T10:00:00.123Z","job":"stats","event":"start","host":"web1","pid":4242}`,
		`{"time":"2026-11-30T10:00:40.500Z","job":"stats","event":"end","host":"web1","pid":4242,"status":"success","exit_code":0,"duration_seconds":40.4}`,
		"\x00\x01binary\xff garbage",
		`{"time":"2026-11-30T11:00:00.010Z","job":"stats","event":"skip","host":"web1","pid":4300,"reason":"locked","holder_pid":4242}`,
		`{"time":"2026-11-30T11:00:00.010Z","job":"stats","event":"explode"}`,
		`{"time":"2036-11-30T11:00:00Z","job":"stats","event":"start","host":"web1","pid":1}`, // the future
		`{"time":"2026-11-30T11:00:00Z","job":"other","event":"start","host":"web1","pid":1}`,
		`{"time":"2026-11-30T12:00:00Z","job":"stats","event":"end","host":"web1","pid":9,"status":"failure"}`,
	)
	// A line of 10 MB is one parse error, not a crash, and does not stop
	// the tail.
	appendLines(t, path, `{"time":"2026-11-30T12:00:00Z","job":"`+strings.Repeat("x", 10<<20)+`"}`,
		`{"time":"2026-11-30T13:00:00Z","job":"stats","event":"end","host":"web1","pid":10,"status":"success"}`)
	sink := newSink("stats")
	src := newRunLog(t, path, "json")
	_, stop := runStepped(t, src, sink)
	stop()
	j, s := view(t, sink.Tracker, "stats")
	if j.RunCounts != [6]uint64{2, 1, 0, 0} || j.Skips != 1 || j.LastDuration != 40.4 {
		t.Errorf("runs %v skips %d last duration %v", j.RunCounts, j.Skips, j.LastDuration)
	}
	if s.ParseErrors != 4 || s.Records != 6 || s.UnknownJob != 1 {
		t.Errorf("parse errors %d records %d unknown %d; want 4, 6, 1", s.ParseErrors, s.Records, s.UnknownJob)
	}
}

// gatedSink holds every Apply until its gate is closed, and tells waiting
// of each Apply that waits.
type gatedSink struct {
	*healthSink
	gate    chan struct{}
	waiting chan struct{}
}

func (g *gatedSink) Apply(b model.Batch) {
	select {
	case g.waiting <- struct{}{}:
	default:
	}
	<-g.gate
	g.healthSink.Apply(b)
}

// Batches are applied on a goroutine of their own while the next ones are
// parsed, but the tailer goes idle (a StepWaker's Step returns) only once
// every batch it read has been applied: a pass over the file is whole when
// it ends.
func TestRunLogAppliesEveryBatchBeforeIdle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.log")
	appendLines(t, path,
		`{"time":"2026-11-30T10:00:00Z","job":"stats","event":"start","host":"web1","pid":1}`,
		`{"time":"2026-11-30T10:00:40Z","job":"stats","event":"end","host":"web1","pid":1,"status":"success"}`,
		`{"time":"2026-11-30T11:00:00Z","job":"stats","event":"start","host":"web1","pid":2}`,
		`{"time":"2026-11-30T11:00:40Z","job":"stats","event":"end","host":"web1","pid":2,"status":"success"}`,
	)
	sink := &gatedSink{healthSink: newSink("stats"), gate: make(chan struct{}), waiting: make(chan struct{}, 1)}
	src := newRunLog(t, path, "json")
	w := tail.NewStepWaker()
	src.waker = w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, nil, sink) }()
	idle := make(chan struct{})
	go func() { w.Idle(); close(idle) }()
	// The file read, its batch waits to be applied: from here on a tailer
	// that went idle early would do so at once. The window is the only way
	// to see that something does not happen.
	testproc.Receive(t, sink.waiting, 30*time.Second, "the batch to be handed over")
	select {
	case <-idle:
		t.Fatal("the tailer went idle while its batch waited to be applied")
	case <-time.After(200 * time.Millisecond): // a window in which the early idle would come
	}
	close(sink.gate)
	<-idle
	if j, _ := view(t, sink.Tracker, "stats"); j.RunCounts[0] != 2 {
		t.Errorf("idle with %d of 2 runs applied", j.RunCounts[0])
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunLogRegexReadsAnApplicationLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	appendLines(t, path,
		"2026-11-30 18:00:00.001 INFO [stats] starting",
		"2026-11-30 18:00:00.002 INFO [stats] previous run still running, skipping",
		"2026-11-30 18:00:05.000 DEBUG unrelated chatter",
		"2026-11-30 19:00:00.002 WARN [stats] previous run still running, skipping",
	)
	src := newRunLog(t, path, "regex", record.Pattern{
		Regex:  `^(?P<time>\S+ \S+) .*\[(?P<job>[\w.-]+)\] previous run still running, skipping`,
		Event:  "skip",
		Reason: "locked",
	})
	sink := newSink("stats")
	_, stop := runStepped(t, src, sink)
	stop()
	j, s := view(t, sink.Tracker, "stats")
	if j.Skips != 2 || j.ConsecutiveSkips != 2 || s.ParseErrors != 0 || s.Records != 2 {
		t.Errorf("skips %d consecutive %d parse errors %d records %d; want 2 2 0 2", j.Skips, j.ConsecutiveSkips, s.ParseErrors, s.Records)
	}
}

// A source restarted from the position its tracker stored reads only what
// came after it.
func TestRunLogResumesFromTheStoredPosition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.log")
	appendLines(t, path, `{"time":"2026-11-30T10:00:00Z","job":"stats","event":"end","host":"a","pid":1,"status":"success"}`)
	sink := newSink("stats")
	step, stop := runStepped(t, newRunLog(t, path, "json"), sink)
	appendLines(t, path, `{"time":"2026-11-30T11:00:00Z","job":"stats","event":"end","host":"a","pid":2,"status":"success"}`)
	step()
	stop()
	appendLines(t, path, `{"time":"2026-11-30T12:00:00Z","job":"stats","event":"end","host":"a","pid":3,"status":"failure"}`)
	_, stop = runStepped(t, newRunLog(t, path, "json"), sink)
	stop()
	j, _ := view(t, sink.Tracker, "stats")
	if j.RunCounts != [6]uint64{2, 1, 0, 0} {
		t.Fatalf("runs %v, want 2 successes and 1 failure", j.RunCounts)
	}
}

func TestRunLogHealthFollowsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.log")
	sink := newSink("stats")
	src := newRunLog(t, path, "json")
	src.healthEvery = 10 * time.Millisecond
	step, _ := runStepped(t, src, sink)
	waitHealth := func(want bool) {
		t.Helper()
		testproc.WaitUntil(t, 5*time.Second, fmt.Sprintf("health %v", want), func() bool {
			up, n := sink.lastHealth()
			return n > 0 && up == want
		})
	}
	waitHealth(false)
	appendLines(t, path, `{"time":"2026-11-30T10:00:00Z","job":"stats","event":"end","host":"a","pid":1,"status":"success"}`)
	step()
	waitHealth(true)
	_, n := sink.lastHealth()
	time.Sleep(50 * time.Millisecond) // a window of five health checks, in which none may be reported
	if _, n2 := sink.lastHealth(); n2 != n {
		t.Errorf("health reported %d more times without a change", n2-n)
	}
}

// The source says AtEnd once it has read to the end of its file and every
// batch before has been applied: after the last batch of a catch-up and
// not on those before it, on the first pass even when there is nothing to
// read, and not again while it is idle with nothing new.
func TestRunLogAtEnd(t *testing.T) {
	line := func(i int) string {
		return fmt.Sprintf(`{"time":"2026-11-30T10:00:%02dZ","job":"stats","event":"end","host":"a","pid":%d,"status":"success"}`, i%60, i+1)
	}
	atEnd := batchNote{atEnd: true}
	// idle steps the tailer with nothing new: no batch at all.
	idle := func(t *testing.T, step func(), sink *healthSink) {
		t.Helper()
		for range 3 {
			step()
		}
		if got := sink.takeBatches(); len(got) != 0 {
			t.Errorf("idle with nothing new, the source handed over %+v", got)
		}
	}

	t.Run("catch-up longer than a batch", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "runs.log")
		n := tail.BatchLines + 10
		lines := make([]string, n)
		for i := range lines {
			lines[i] = line(i)
		}
		appendLines(t, path, lines...)
		sink := newSink("stats")
		step, _ := runStepped(t, newRunLog(t, path, "json"), sink)
		// Batches end at tail.BatchLines lines and at the end of each read
		// buffer: how many there are depends on the buffer's growth.
		got := sink.takeBatches()
		events := 0
		for i, b := range got {
			events += b.events
			if last := i == len(got)-1; b.atEnd != last {
				t.Errorf("batch %d of %d: AtEnd %v", i+1, len(got), b.atEnd)
			}
		}
		if len(got) < 3 || got[len(got)-1] != atEnd || events != n {
			t.Fatalf("batches of the catch-up %+v: want at least two with %d events in all, then an AtEnd one", got, n)
		}
		idle(t, step, sink)
		appendLines(t, path, line(n))
		step()
		if got, want := sink.takeBatches(), []batchNote{{events: 1}, atEnd}; !slices.Equal(got, want) {
			t.Errorf("batches after an append %+v, want %+v", got, want)
		}
		idle(t, step, sink)
	})

	t.Run("empty file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "runs.log")
		appendLines(t, path)
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		sink := newSink("stats")
		step, _ := runStepped(t, newRunLog(t, path, "json"), sink)
		if got := sink.takeBatches(); !slices.Equal(got, []batchNote{atEnd}) {
			t.Fatalf("batches at start %+v, want one AtEnd", got)
		}
		idle(t, step, sink)
	})

	t.Run("missing file, then written", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "runs.log")
		sink := newSink("stats")
		step, _ := runStepped(t, newRunLog(t, path, "json"), sink)
		if got := sink.takeBatches(); !slices.Equal(got, []batchNote{atEnd}) {
			t.Fatalf("batches at start %+v, want one AtEnd", got)
		}
		idle(t, step, sink)
		appendLines(t, path, line(0), line(1))
		step()
		if got, want := sink.takeBatches(), []batchNote{{events: 2}, atEnd}; !slices.Equal(got, want) {
			t.Errorf("batches once the file is written %+v, want %+v", got, want)
		}
	})

	// A path the tailer cannot read may hold records: no AtEnd until it is
	// read.
	t.Run("unreadable path", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "runs.log")
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		sink := newSink("stats")
		step, _ := runStepped(t, newRunLog(t, path, "json"), sink)
		idle(t, step, sink)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		appendLines(t, path, line(0))
		step()
		if got, want := sink.takeBatches(), []batchNote{{events: 1}, atEnd}; !slices.Equal(got, want) {
			t.Errorf("batches once the file is readable %+v, want %+v", got, want)
		}
	})

	// After a restart from the saved position, the first pass says AtEnd
	// though it reads nothing new.
	t.Run("restart with nothing new", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "runs.log")
		appendLines(t, path, line(0))
		sink := newSink("stats")
		_, stop := runStepped(t, newRunLog(t, path, "json"), sink)
		stop()
		sink.takeBatches()
		runStepped(t, newRunLog(t, path, "json"), sink)
		if got := sink.takeBatches(); !slices.Equal(got, []batchNote{atEnd}) {
			t.Errorf("batches after a restart %+v, want one AtEnd", got)
		}
	})
}
