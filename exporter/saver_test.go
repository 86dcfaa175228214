package exporter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/jobwatch/jobwatch/model"
)

// countingStore counts saves and fails them on demand.
type countingStore struct {
	store
	saves atomic.Int64
	fail  atomic.Bool
}

func (s *countingStore) Save(c *model.Changes, prev, all *model.Saved) error {
	if s.fail.Load() {
		return syscall.ENOSPC
	}
	defer s.saves.Add(1) // once written
	return s.store.Save(c, prev, all)
}

// startSaverTest runs an exporter on testConfig whose store counts saves.
// runUntilEnd runs e until the test ends, and checks that it stopped
// cleanly.
func runUntilEnd(t *testing.T, e *Exporter) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func startSaverTest(t *testing.T, interval time.Duration) (*Exporter, *countingStore, *prometheus.Registry, *os.File) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jobwatch.yml")
	writeFile(t, cfg, testConfig)
	writeFile(t, filepath.Join(dir, "runs.log"), "")
	e, err := New(Options{StartupHold: -1, ConfigFile: cfg, StateDir: filepath.Join(dir, "state"), SaveInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{store: e.store}
	e.store = cs
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cs.fail.Store(false)
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.Collectors()...)
	log, err := os.OpenFile(filepath.Join(dir, "runs.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return e, cs, reg, log
}

// shown is what a scrape shows of stats' successful runs.
func shown(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "jobwatch_job_runs_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == "stats" && m.GetLabel()[1].GetValue() == "success" {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatal("no jobwatch_job_runs_total for stats")
	return 0
}

func appendSuccess(t *testing.T, log *os.File, pid int) {
	t.Helper()
	line := `{"time":"2026-11-30T10:00:00Z","job":"stats","event":"end","host":"a","pid":` + strconv.Itoa(pid) + `,"status":"success"}` + "\n"
	if _, err := log.WriteString(line); err != nil {
		t.Fatal(err)
	}
}

// procWrites is the bytes this process sent to storage (write_bytes of
// /proc/self/io). Not wchar or syscw: the Go runtime wakes its network
// poller by writing 8 bytes to an eventfd, which they count.
func procWrites(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skip("no /proc/self/io:", err)
	}
	var out []string
	for line := range bytes.Lines(data) {
		if k, _, _ := strings.Cut(string(line), ":"); k == "write_bytes" {
			out = append(out, strings.TrimSpace(string(line)))
		}
	}
	return strings.Join(out, " ")
}

// A scrape reads the state last saved: it writes nothing to storage and
// makes no save (the only place that writes or fsyncs), however many
// scrapes come.
func TestScrapesDoNotWrite(t *testing.T) {
	e, cs, reg, log := startSaverTest(t, 10*time.Millisecond)
	appendSuccess(t, log, 1)
	// Nothing new arrives: the saver is idle once the last change is
	// saved, the record and the source's health (its first check comes
	// within a second of the start).
	waitUntil(t, "the record and the source's health saved", func() bool {
		srcs := e.Saved().Sources()
		return shown(t, reg) == 1 && len(srcs) == 1 && srcs[0].Up
	})
	scrapesChangeNothing(t, reg, cs)
}

// scrapesChangeNothing checks that 100 scrapes write no byte to storage
// and make no save. write_bytes counts every goroutine of the test process
// (the Go test runner's own, a previous test's cleanup), and on a loaded
// machine a source's last poll of a record may come after a test's idle
// wait and be saved: a scrape that wrote or saved would do so in every
// round, so one round of 100 scrapes without either, out of three, shows
// that scrapes do neither.
func scrapesChangeNothing(t *testing.T, reg *prometheus.Registry, cs *countingStore) {
	t.Helper()
	var rounds []string
	for range 3 {
		before, savesBefore := procWrites(t), cs.saves.Load()
		scrape100(t, reg)
		after, savesAfter := procWrites(t), cs.saves.Load()
		if after == before && savesAfter == savesBefore {
			return
		}
		rounds = append(rounds, fmt.Sprintf("%s before, %s after, %d saves", before, after, savesAfter-savesBefore))
	}
	t.Errorf("100 scrapes wrote or saved in each of 3 rounds: %s", strings.Join(rounds, "; "))
}

// A scrape does not save what is not saved yet either: it shows the state
// last saved, and the saver, not the scrape, writes the rest. With an hour
// between commits, the record read after the first commit waits for the
// hour, however many scrapes come.
func TestScrapesDoNotSave(t *testing.T) {
	e, cs, reg, log := startSaverTest(t, time.Hour)
	waitUntil(t, "the first save", func() bool { return cs.saves.Load() == 1 })
	appendSuccess(t, log, 1)
	waitUntil(t, "the record decided", func() bool { return runs(t, e, "stats")[0] == 1 })
	scrapesChangeNothing(t, reg, cs)
	if n := cs.saves.Load(); n != 1 {
		t.Errorf("100 scrapes made %d saves", n-1)
	}
	if got := shown(t, reg); got != 0 {
		t.Errorf("a scrape shows %v successes, want the 0 saved", got)
	}
}

func scrape100(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	for range 100 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// When saves fail (disk full) scrapes go on showing the state last saved,
// so no counter shown can go back after a kill -9; the failures are
// counted; once a save succeeds again, everything read meanwhile shows.
func TestFailedSavesKeepTheShownState(t *testing.T) {
	e, cs, reg, log := startSaverTest(t, 10*time.Millisecond)
	appendSuccess(t, log, 1)
	waitUntil(t, "the record shown", func() bool { return shown(t, reg) == 1 })

	cs.fail.Store(true)
	appendSuccess(t, log, 2)
	appendSuccess(t, log, 3)
	waitUntil(t, "the records read", func() bool { return runs(t, e, "stats")[0] == 3 })
	waitUntil(t, "two failed saves", func() bool { return testutil.ToFloat64(e.saveFailures) >= 2 })
	if got := shown(t, reg); got != 1 {
		t.Fatalf("while saves fail a scrape shows %v successes, want the 1 saved", got)
	}

	cs.fail.Store(false)
	waitUntil(t, "the records shown once saved", func() bool { return shown(t, reg) == 3 })
	failures := testutil.ToFloat64(e.saveFailures)
	appendSuccess(t, log, 4)
	waitUntil(t, "the next record shown", func() bool { return shown(t, reg) == 4 })
	if got := testutil.ToFloat64(e.saveFailures); got != failures {
		t.Errorf("saves still fail: %v failures, then %v", failures, got)
	}
}

// A backlog read shows one commit after its last change arrives, and
// however its source hands it over (one batch or many), it costs at most
// one commit per SaveInterval while it lasts.
func TestCatchUpShownWhenItEnds(t *testing.T) {
	const gap = 20 * time.Millisecond
	_, cs, reg, log := startSaverTest(t, gap)
	waitUntil(t, "the first save", func() bool { return cs.saves.Load() >= 1 })
	var b strings.Builder
	for pid := range 200 {
		b.WriteString(`{"time":"2026-11-30T10:00:00Z","job":"stats","event":"end","host":"a","pid":` + strconv.Itoa(pid+1) + `,"status":"success"}` + "\n")
	}
	before, t0 := cs.saves.Load(), time.Now()
	if _, err := log.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the backlog shown", func() bool { return shown(t, reg) == 200 })
	// The commits it took began at least gap apart: one at once, then one
	// per gap of the time it took (a health change may add one more).
	if n, most := cs.saves.Load()-before, 2+int64(time.Since(t0)/gap); n > most {
		t.Errorf("%d commits for one catch-up shown after %v, want at most %d", n, time.Since(t0), most)
	}
}

// TestBigCommitCollects: a commit of most jobs (a catch-up's) is followed
// by a garbage collection, the state committed before being garbage then;
// a commit of a few jobs is not. Not parallel: it counts the process's
// forced collections.
func TestBigCommitCollects(t *testing.T) {
	const n = 1200
	e := hourlyJobs(t, n)
	t.Cleanup(func() { e.store.Close() })
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	now := time.Now()
	for _, tc := range []struct {
		jobs    int
		collect bool
	}{{n, true}, {3, false}} {
		var evs []model.Event
		for i := range tc.jobs {
			evs = append(evs, model.Event{Kind: model.Skip, Job: fmt.Sprintf("job_%05d", i), Host: "web1", PID: i + 1, Time: now, SkipLabel: "locked"})
		}
		e.tracker.Apply(model.Batch{Source: "runs", Events: evs, AtEnd: true})
		before := forced()
		if err := e.save(); err != nil {
			t.Fatal(err)
		}
		if got := forced() > before; got != tc.collect {
			t.Errorf("a commit of %d of %d jobs: collected %v, want %v", tc.jobs, n, got, tc.collect)
		}
	}
}
