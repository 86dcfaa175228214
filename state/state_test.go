package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/version"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// testModel is a tracker with two jobs and a source, and the saver's side:
// the saved state it keeps, and a store.
type testModel struct {
	tr    *model.Tracker
	saved *model.Saved
	store *Store
}

func newTestModel(t *testing.T, dir string) *testModel {
	t.Helper()
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return t0.Add(time.Hour) }})
	tr.Configure([]model.JobSpec{
		{Name: "stats", Schedule: schedule.Every(time.Hour), StaleMultiple: 2},
		{Name: "backup", Schedule: schedule.Every(24 * time.Hour), Timeout: 6 * time.Hour, StaleMultiple: 2},
	}, []model.SourceSpec{{Name: "runs", Type: "runlog", Identity: "runlog:/var/log/runs.log"}})
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	m := &testModel{tr: tr, store: s}
	snap, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if snap != nil {
		if err := tr.Restore(snap); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// save saves what changed, as the exporter's saver does.
func (m *testModel) save(t *testing.T) {
	t.Helper()
	c := m.tr.Changes()
	all := m.saved.With(c)
	if err := m.store.Save(c, m.saved, all); err != nil {
		t.Fatal(err)
	}
	m.saved = all
}

func ev(kind model.Kind, job string, pid int, at time.Duration) model.Event {
	e := model.Event{Kind: kind, Job: job, Host: "web1", PID: pid, Time: t0.Add(at)}
	if kind == model.End {
		e.Result, e.HasExitCode = model.Success, true
	}
	return e
}

// views is the tracker's whole state, to compare.
func views(tr *model.Tracker) string {
	b, _ := json.Marshal(tr.Snapshot())
	return string(b)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	m := newTestModel(t, dir)
	m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":1}`), Events: []model.Event{
		ev(model.Start, "stats", 1, 0), ev(model.End, "stats", 1, time.Minute), ev(model.Start, "stats", 2, 2*time.Minute),
	}})
	m.save(t) // the first save writes a snapshot
	snapSize := fileSize(t, filepath.Join(dir, SnapshotFile))
	logSize := fileSize(t, filepath.Join(dir, LogFile))

	// Later saves append what changed: backup only, and the position.
	skip := ev(model.Skip, "backup", 3, 3*time.Minute)
	skip.Reason, skip.SkipLabel, skip.Lock, skip.Holder = "locked", "locked", "redis", "web2:77:r1"
	declared := ev(model.Skip, "backup", 4, 3*time.Minute) // a label a regex source declares
	declared.SkipLabel = "maintenance"
	lost := ev(model.LockLost, "backup", 5, 4*time.Minute)
	lost.Lock, lost.Reason = "redis", "key_gone"
	end := ev(model.End, "backup", 5, 5*time.Minute)
	end.Reason, end.Output = "lock_lost", "killed: lock lost"
	leased := ev(model.Start, "backup", 6, 3*time.Minute+2*time.Second)
	leased.LockTTL = 90500 * time.Millisecond
	m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":2}`), ParseErrors: 1, Events: []model.Event{
		skip, declared, ev(model.Start, "backup", 5, 3*time.Minute+time.Second), leased,
		lost, end,
	}})
	c := m.tr.Changes()
	if len(c.Jobs) != 1 || c.Jobs["backup"] == nil || len(c.Sources) != 1 || c.Full {
		t.Fatalf("changes: %d jobs, %d sources, full %v; want backup and runs", len(c.Jobs), len(c.Sources), c.Full)
	}
	all := m.saved.With(c)
	if err := m.store.Save(c, m.saved, all); err != nil {
		t.Fatal(err)
	}
	m.saved = all
	if got := fileSize(t, filepath.Join(dir, SnapshotFile)); got != snapSize {
		t.Errorf("an append rewrote the snapshot (%d bytes, was %d)", got, snapSize)
	}
	if got := fileSize(t, filepath.Join(dir, LogFile)); got <= logSize || got > logSize+2000 {
		t.Errorf("log grew from %d to %d bytes for one job and one source", logSize, got)
	}
	m.save(t) // nothing changed: nothing written
	want := views(m.tr)
	m.store.Close()

	m2 := newTestModel(t, dir)
	if got := views(m2.tr); got != want {
		t.Fatalf("loaded state differs:\n got %s\nwant %s", got, want)
	}
	backup := m2.tr.Snapshot().Jobs["backup"]
	if !maps.Equal(backup.SkipsByReason(), map[string]uint64{"locked": 1, "maintenance": 1}) || !maps.Equal(backup.LockLost(), map[string]uint64{"redis": 1}) || len(backup.Recent) != 3 ||
		backup.Recent[0].Fields().Holder != "web2:77:r1" || backup.Recent[2].Fields().Reason != "lock_lost" || len(backup.DurationHistory) != 1 ||
		len(backup.Open) != 1 || !backup.Open[0].Overlapped || backup.Open[0].Lease != 90500*time.Millisecond || backup.LockTTL != 90500*time.Millisecond {
		t.Errorf("new fields not saved: %+v", backup)
	}
	if got := string(m2.tr.Position("runs")); got != `{"offset":2}` {
		t.Errorf("position %s", got)
	}
	for _, p := range []string{dir, filepath.Join(dir, SnapshotFile), filepath.Join(dir, LogFile)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v: readable by others", p, fi.Mode().Perm())
		}
	}
}

// lock_ttl_seconds is optional: a job record without it (every state
// written before it existed) loads with no lease, one with it keeps it, and
// a job without a lease is saved without the key, as before.
func TestLockTTLIsOptional(t *testing.T) {
	for _, tc := range []struct {
		name, record string
		want         time.Duration
	}{
		{"absent", `{"first_watched":"2026-11-30T10:00:00Z","durations":{"sum":0,"count":0}}`, 0},
		{"present", `{"first_watched":"2026-11-30T10:00:00Z","durations":{"sum":0,"count":0},"lock_ttl_seconds":120.25}`, 120250 * time.Millisecond},
		{"negative dropped", `{"first_watched":"2026-11-30T10:00:00Z","durations":{"sum":0,"count":0},"lock_ttl_seconds":-1}`, 0},
		{"beyond the bound dropped", `{"first_watched":"2026-11-30T10:00:00Z","durations":{"sum":0,"count":0},"lock_ttl_seconds":1e300}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r jobRecord
			if err := json.Unmarshal([]byte(tc.record), &r); err != nil {
				t.Fatal(err)
			}
			if got := r.toModel().LockTTL; got != tc.want {
				t.Errorf("lock TTL %v, want %v", got, tc.want)
			}
		})
	}
	b, err := json.Marshal(jobToRecord(&model.JobView{JobState: &model.JobState{}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "lock_ttl") {
		t.Errorf("a job without a lease saved as %s", b)
	}
}

// TestLogEntriesHoldWhatWasAdded: a save appends a job's runs and
// durations added since the save before, not all it keeps (up to 50 runs
// and 100 durations), and the state loads back the same after any number
// of such saves, with runs pushed out of the kept ones in between.
func TestLogEntriesHoldWhatWasAdded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	m := newTestModel(t, dir)
	m.save(t) // the snapshot
	pid := 0
	runs := func(n int) {
		var evs []model.Event
		for range n {
			pid++
			at := time.Duration(pid) * time.Minute
			evs = append(evs, ev(model.Start, "stats", pid, at), ev(model.End, "stats", pid, at+time.Duration(pid%7)*time.Second))
		}
		m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(fmt.Sprintf(`{"offset":%d}`, pid)), Events: evs})
	}
	for round, n := range []int{1, 3, 0, 40, 7, 1, 60, 2, 1, 0, 120, 1} {
		if n == 0 {
			pid++ // a run that starts: the job changes, its history does not
			m.tr.Apply(model.Batch{Source: "runs", Events: []model.Event{ev(model.Start, "stats", pid, time.Duration(pid)*time.Minute)}})
			m.tr.Apply(model.Batch{Source: "runs", Events: []model.Event{ev(model.End, "stats", pid, time.Duration(pid)*time.Minute+time.Second)}})
			pid++
			m.tr.Apply(model.Batch{Source: "runs", Events: []model.Event{ev(model.Start, "stats", pid, time.Duration(pid)*time.Minute)}})
		} else {
			runs(n)
		}
		before := fileSize(t, filepath.Join(dir, LogFile))
		m.save(t)
		grew := fileSize(t, filepath.Join(dir, LogFile)) - before
		// A run kept whole is about 150 bytes; a job without its history
		// about 700.
		if limit := int64(1500 + 200*min(n, 50)); grew > limit {
			t.Errorf("round %d: %d runs added, the log grew %d bytes (more than %d): the job's history was written again", round, n, grew, limit)
		}
		if round%3 == 2 || round == 11 {
			want := views(m.tr)
			m.store.Close()
			m = newTestModel(t, dir)
			if got := views(m.tr); got != want {
				t.Fatalf("round %d: loaded state differs:\n got %s\nwant %s", round, got, want)
			}
			if h := m.tr.Snapshot().Jobs["stats"]; round == 11 && (len(h.Recent) != model.MaxRecentRuns || len(h.DurationHistory) != model.MaxDurationHistory) {
				t.Fatalf("loaded %d runs and %d durations, want the most kept", len(h.Recent), len(h.DurationHistory))
			}
			m.save(t) // a snapshot again after a load
		}
	}
}

// discovered, retired and resumed are optional, as lock_ttl_seconds: a
// record without them (every state written before them) is a watched job
// of the config; with them they load back; a watched job of the config is
// saved without the keys, as before.
func TestRetiredIsOptional(t *testing.T) {
	retired := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, record string
		want         model.JobState
	}{
		{"absent", `{"first_watched":"2026-11-30T10:00:00Z","durations":{"sum":0,"count":0}}`, model.JobState{}},
		{"retired", `{"first_watched":"2026-11-30T10:00:00Z","durations":{"sum":0,"count":0},"discovered":true,"retired":"2026-12-01T09:00:00Z"}`,
			model.JobState{Discovered: true, Retired: model.StampOf(retired)}},
		{"resumed", `{"first_watched":"2026-11-30T10:00:00Z","durations":{"sum":0,"count":0},"discovered":true,"resumed":"2026-12-01T09:00:00Z"}`,
			model.JobState{Discovered: true, Resumed: model.StampOf(retired)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r jobRecord
			if err := json.Unmarshal([]byte(tc.record), &r); err != nil {
				t.Fatal(err)
			}
			got := r.toModel()
			if got.Discovered != tc.want.Discovered || !got.Retired.Equal(tc.want.Retired.Time()) || !got.Resumed.Equal(tc.want.Resumed.Time()) {
				t.Errorf("discovered %v, retired %v, resumed %v; want %v, %v, %v", got.Discovered, got.Retired, got.Resumed, tc.want.Discovered, tc.want.Retired, tc.want.Resumed)
			}
			b, err := json.Marshal(jobToRecord(&model.JobView{JobState: &got.JobState}, nil))
			if err != nil {
				t.Fatal(err)
			}
			var back jobRecord
			if err := json.Unmarshal(b, &back); err != nil || back.Discovered != r.Discovered || !back.Retired.Equal(r.Retired) || !back.Resumed.Equal(r.Resumed) {
				t.Errorf("saved again as %s (%v)", b, err)
			}
		})
	}
	b, err := json.Marshal(jobToRecord(&model.JobView{JobState: &model.JobState{}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "discovered") || strings.Contains(string(b), "retired") || strings.Contains(string(b), "resumed") {
		t.Errorf("a job of the config saved as %s", b)
	}
}

// A kill during an append leaves a torn entry at the log's end: it is
// ignored (that save did not happen), and the next save starts a new
// snapshot, so nothing is ever appended after it.
func TestTornLogTailIsIgnored(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(good []byte, lastEntry int) []byte
	}{
		{"cut in the entry", func(b []byte, last int) []byte { return b[:last+(len(b)-last)/2] }},
		{"cut in the length", func(b []byte, last int) []byte { return b[:last+2] }},
		{"zeros instead of the entry", func(b []byte, last int) []byte {
			return append(b[:last:last], make([]byte, len(b)-last)...)
		}},
		{"flipped bit in the entry", func(b []byte, last int) []byte {
			c := append([]byte(nil), b...)
			c[len(c)-3] ^= 1
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := newTestModel(t, dir)
			m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":1}`), Events: []model.Event{ev(model.End, "stats", 1, 0)}})
			m.save(t)
			m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":2}`), Events: []model.Event{ev(model.End, "stats", 2, time.Minute)}})
			m.save(t)
			want := views(m.tr)
			logPath := filepath.Join(dir, LogFile)
			last := int(fileSize(t, logPath))
			m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":3}`), Events: []model.Event{ev(model.End, "stats", 3, 2*time.Minute)}})
			m.save(t)
			m.store.Close()
			good, _ := os.ReadFile(logPath)
			if err := os.WriteFile(logPath, tc.spoil(good, last), 0o600); err != nil {
				t.Fatal(err)
			}

			m2 := newTestModel(t, dir)
			if got := views(m2.tr); got != want {
				t.Fatalf("state after a torn save:\n got %s\nwant the state before it %s", got, want)
			}
			if got := string(m2.tr.Position("runs")); got != `{"offset":2}` {
				t.Fatalf("position %s, want the one saved with the events", got)
			}
			// The next save writes a snapshot and a new log; a restart then
			// finds it all.
			m2.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":4}`), Events: []model.Event{ev(model.End, "stats", 4, 3*time.Minute)}})
			m2.save(t)
			want2 := views(m2.tr)
			m2.store.Close()
			if got := views(newTestModel(t, dir).tr); got != want2 {
				t.Fatalf("state after the next save:\n got %s\nwant %s", got, want2)
			}
		})
	}
}

func TestDamageIsAnErrorNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	m := newTestModel(t, dir)
	m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":1}`), Events: []model.Event{ev(model.End, "stats", 1, 0)}})
	m.save(t)
	m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":2}`), Events: []model.Event{ev(model.End, "stats", 2, 0)}})
	m.save(t)
	m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":3}`), Events: []model.Event{ev(model.End, "stats", 3, 0)}})
	m.save(t)
	m.store.Close()
	snapPath, logPath := filepath.Join(dir, SnapshotFile), filepath.Join(dir, LogFile)
	snap, _ := os.ReadFile(snapPath)
	log, _ := os.ReadFile(logPath)
	hdr, _, _ := nextFrame(log, 0)
	_, firstEnd, _ := nextFrame(log, frameHeader+len(hdr))

	for _, tc := range []struct {
		name, file string
		data       []byte
		want       string
	}{
		{"snapshot truncated", snapPath, snap[:len(snap)/2], "corrupt"},
		{"snapshot empty", snapPath, nil, "corrupt"},
		{"snapshot zeros", snapPath, make([]byte, len(snap)), "corrupt"},
		{"snapshot with garbage after it", snapPath, append(append([]byte(nil), snap...), "garbage"...), "corrupt"},
		{"snapshot twice", snapPath, append(append([]byte(nil), snap...), snap...), "corrupt"},
		{"log entry damaged before the last", logPath, func() []byte {
			c := append([]byte(nil), log...)
			c[firstEnd-2] ^= 1
			return c
		}(), "corrupt"},
		{"log header damaged", logPath, log[:4], "corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(snapPath, snap, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(logPath, log, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(tc.file, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Load()
			if err == nil || !strings.Contains(err.Error(), tc.file) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v; want an error naming %s and saying %q", err, tc.file, tc.want)
			}
		})
	}
}

// A state a newer jobwatch wrote (a downgrade) is refused, saying which
// jobwatch wrote it and in which format, and left as it is: it is not
// corrupt, and moving it away would lose its history. Either file may be
// the newer one; a file that does not say who wrote it is "a newer
// jobwatch".
func TestNewerFormatIsRefused(t *testing.T) {
	saved := version.Version
	version.Version = "0.2.0"
	t.Cleanup(func() { version.Version = saved })
	newer := func(kind, writer string) []byte {
		h, _ := json.Marshal(header{Format: formatName, Version: Version + 1, Kind: kind, Generation: 1, Jobwatch: writer})
		buf := appendFrame(nil, h)
		if kind == "snapshot" {
			buf = appendFrame(buf, []byte(`{"end":true}`))
		}
		return buf
	}
	for _, tc := range []struct {
		name, file, writer, by string
	}{
		{"snapshot", SnapshotFile, "0.3.0~rc.1", "jobwatch 0.3.0~rc.1"},
		{"log", LogFile, "0.3.0", "jobwatch 0.3.0"},
		{"unsaid", SnapshotFile, "", "a newer jobwatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := newTestModel(t, dir)
			m.save(t)
			m.store.Close()
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, newer(map[string]string{SnapshotFile: "snapshot", LogFile: "log"}[tc.file], tc.writer), 0o600); err != nil {
				t.Fatal(err)
			}
			before := dirListing(t, dir)
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Load()
			s.Close()
			var ne *NewerError
			if !errors.As(err, &ne) || ne.Format != Version+1 || ne.Path != path {
				t.Fatalf("Load: %v; want a NewerError of format %d naming %s", err, Version+1, path)
			}
			msg := err.Error()
			for _, want := range []string{path, fmt.Sprintf("written by %s (state format %d)", tc.by, Version+1), "this jobwatch (version 0.2.0)", fmt.Sprintf("formats 1 to %d", Version), "run " + tc.by + " or newer"} {
				if !strings.Contains(msg, want) {
					t.Errorf("Load: %q; want it to say %q", msg, want)
				}
			}
			if strings.Contains(msg, "corrupt") {
				t.Errorf("Load: %q calls the newer state corrupt", msg)
			}
			if after := dirListing(t, dir); after != before {
				t.Errorf("the refused state changed:\n%s\n%s", before, after)
			}
		})
	}
}

// Every file a save writes says which jobwatch wrote it.
func TestHeaderNamesTheWriter(t *testing.T) {
	saved := version.Version
	version.Version = "0.0.0~gitabc1234"
	t.Cleanup(func() { version.Version = saved })
	dir := t.TempDir()
	m := newTestModel(t, dir)
	m.save(t)
	m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":1}`), Events: []model.Event{ev(model.End, "stats", 1, 0)}})
	m.save(t)
	m.store.Close()
	for _, f := range []string{SnapshotFile, LogFile} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		payload, _, err := nextFrame(data, 0)
		if err != nil {
			t.Fatal(err)
		}
		var h header
		if err := json.Unmarshal(payload, &h); err != nil || h.Jobwatch != "0.0.0~gitabc1234" {
			t.Errorf("%s's header %s (%v): want jobwatch 0.0.0~gitabc1234", f, payload, err)
		}
	}
}

// dirListing is every file of dir with its size and content's hash.
func dirListing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		fmt.Fprintf(&b, "%s %d %x\n", e.Name(), len(data), crc32.ChecksumIEEE(data))
	}
	return b.String()
}

func TestSymlinksAreRefused(t *testing.T) {
	for _, name := range []string{SnapshotFile, LogFile, LegacyFile} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			m := newTestModel(t, dir)
			m.save(t)
			m.store.Close()
			path := filepath.Join(dir, name)
			target := filepath.Join(t.TempDir(), "elsewhere")
			data, _ := os.ReadFile(path)
			os.WriteFile(target, data, 0o600)
			os.Remove(path)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			if name == LegacyFile {
				os.Remove(filepath.Join(dir, SnapshotFile))
				os.Remove(filepath.Join(dir, LogFile))
			}
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), path) {
				t.Fatalf("Load through a symlink at %s: %v", path, err)
			}
		})
	}
}

// A kill during a save leaves the temporary file it was writing: the next
// start removes it (format 1's state.json.tmp* as well), and nothing else.
func TestOpenRemovesLeftoverTemporaries(t *testing.T) {
	dir := t.TempDir()
	leftovers := []string{"state.json.tmp123", "state.snap.tmp456", "state.log.tmp789"}
	for _, n := range append(leftovers, "keep.tmp1", "notes") {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"keep.tmp1", "lock", "notes"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("directory holds %v after Open, want %v", names, want)
	}
}

func TestDirectoryIsLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open: %v; want in use", err)
	}
	s.Close()
	s2, err := Open(dir)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

// A kill during a compaction, between the rename of the new snapshot and
// that of the new log, leaves the log of the generation before: it is
// ignored (the new snapshot holds all of it, and its older job records
// would take counts back). A format-1 state.json left beside a snapshot by
// a kill during the migration is ignored too, and removed by the next save.
func TestKillDuringCompaction(t *testing.T) {
	dir := t.TempDir()
	m := newTestModel(t, dir)
	for i := range 3 {
		m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(fmt.Sprintf(`{"offset":%d}`, i+1)), Events: []model.Event{ev(model.End, "stats", i+1, time.Duration(i)*time.Minute)}})
		m.save(t)
	}
	oldLog, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	// A reload makes the next save a compaction.
	m.tr.Configure([]model.JobSpec{
		{Name: "stats", Schedule: schedule.Every(time.Hour), StaleMultiple: 2},
		{Name: "backup", Schedule: schedule.Every(24 * time.Hour), Timeout: 6 * time.Hour, StaleMultiple: 2},
	}, []model.SourceSpec{{Name: "runs", Type: "runlog", Identity: "runlog:/var/log/runs.log"}})
	m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":9}`), Events: []model.Event{ev(model.End, "stats", 9, time.Hour)}})
	m.save(t)
	want := views(m.tr)
	m.store.Close()
	if err := os.WriteFile(filepath.Join(dir, LogFile), oldLog, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, LegacyFile), []byte(`{"version":1,"jobs":{},"sources":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}

	m2 := newTestModel(t, dir)
	if got := views(m2.tr); got != want {
		t.Fatalf("state after a kill during a compaction:\n got %s\nwant %s", got, want)
	}
	m2.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":10}`), Events: []model.Event{ev(model.Skip, "backup", 10, time.Hour)}})
	m2.save(t)
	if _, err := os.Stat(filepath.Join(dir, LegacyFile)); !os.IsNotExist(err) {
		t.Errorf("state.json beside a snapshot survives a save: %v", err)
	}
	want2 := views(m2.tr)
	m2.store.Close()
	if got := views(newTestModel(t, dir).tr); got != want2 {
		t.Fatalf("state after the next save:\n got %s\nwant %s", got, want2)
	}
}

// A state directory others can write, given directly or through a symlink,
// is refused: they could replace the state's files.
func TestStateDirectoryWritableByOthers(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o1777); err != nil { // as /tmp is
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(open, link); err != nil {
		t.Fatal(err)
	}
	group := filepath.Join(base, "group")
	if err := os.Mkdir(group, 0o770); err != nil {
		t.Fatal(err)
	}
	os.Chmod(group, 0o770)
	for _, dir := range []string{open, link, group} {
		s, err := Open(dir)
		if err == nil {
			s.Close()
			t.Errorf("%s: opened", dir)
			continue
		}
		if !strings.Contains(err.Error(), "writable by others") {
			t.Errorf("%s: %v", dir, err)
		}
	}
	private := filepath.Join(base, "private")
	if err := os.Mkdir(private, 0o750); err != nil {
		t.Fatal(err)
	}
	s, err := Open(private)
	if err != nil {
		t.Fatalf("a directory only its owner writes: %v", err)
	}
	s.Close()
}

// The snapshot's frames, written as they are encoded, are the bytes of
// json.Marshal: the format does not change with the way it is written.
func TestFrameWriterWritesMarshal(t *testing.T) {
	var out bytes.Buffer
	fw := &frameWriter{w: bufio.NewWriter(&out)}
	fw.enc = json.NewEncoder(&fw.payload)
	values := []any{
		header{Format: formatName, Version: Version, Kind: "snapshot", Generation: 3, Written: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)},
		&entry{Jobs: map[string]*jobRecord{`<a&b> "c"` + "\u2028é": {}}, End: true},
	}
	var want []byte
	for _, v := range values {
		if err := fw.add(v); err != nil {
			t.Fatal(err)
		}
		payload, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want = appendFrame(want, payload)
	}
	if err := fw.w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) || fw.size != int64(len(want)) {
		t.Errorf("frames:\n%q (size %d)\n--- want\n%q", out.Bytes(), fw.size, want)
	}
}

// A save that changes most jobs writes a snapshot, not one log entry
// encoded whole in memory; a save of a few jobs appends to the log.
func TestSaveOfManyJobsWritesSnapshot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	const n = 2 * jobsPerFrame
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return t0.Add(time.Hour) }})
	specs := make([]model.JobSpec, n)
	for i := range specs {
		specs[i] = model.JobSpec{Name: fmt.Sprintf("job%04d", i), Schedule: schedule.Every(time.Hour), StaleMultiple: 2}
	}
	tr.Configure(specs, []model.SourceSpec{{Name: "runs", Type: "runlog", Identity: "runlog:/var/log/runs.log"}})
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := &testModel{tr: tr, store: s}
	m.save(t) // everything: a snapshot
	logSize := fileSize(t, filepath.Join(dir, LogFile))
	apply := func(jobs int, at time.Duration) {
		var evs []model.Event
		for i := range jobs {
			evs = append(evs, ev(model.Start, specs[i].Name, 1, at), ev(model.End, specs[i].Name, 1, at+time.Minute))
		}
		tr.Apply(model.Batch{Source: "runs", Events: evs})
	}
	apply(jobsPerFrame+1, 0)
	gen := s.gen
	m.save(t)
	// A new log holds its header only (whose time may be a few bytes longer).
	if s.gen != gen+1 || fileSize(t, filepath.Join(dir, LogFile)) > logSize+10 {
		t.Errorf("a save of %d of %d jobs appended to the log (generation %d, was %d)", jobsPerFrame+1, n, s.gen, gen)
	}
	apply(10, 10*time.Minute)
	m.save(t)
	if s.gen != gen+1 || fileSize(t, filepath.Join(dir, LogFile)) <= logSize+100 {
		t.Errorf("a save of 10 jobs did not append to the log (generation %d, was %d)", s.gen, gen+1)
	}
	want := views(tr)
	s.Close()
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	snap, err := s2.Load()
	if err != nil {
		t.Fatal(err)
	}
	tr2 := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return t0.Add(time.Hour) }})
	tr2.Configure(specs, []model.SourceSpec{{Name: "runs", Type: "runlog", Identity: "runlog:/var/log/runs.log"}})
	if err := tr2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got := views(tr2); got != want {
		t.Error("loaded state differs")
	}
}

// A record held for its job's watermark comes back as it was saved, every
// field of it; one of a kind this version does not know is dropped.
func TestHeldRecordsRoundTrip(t *testing.T) {
	held := []struct {
		source string
		ev     model.Event
	}{
		{"a", model.Event{Time: time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC), Kind: model.Start, Host: "web1", PID: 7, RunID: "r1", LockTTL: 90 * time.Second}},
		{"b", model.Event{Time: time.Date(2026, 11, 30, 10, 0, 40, 0, time.UTC), Kind: model.End, Host: "web1", PID: 7, RunID: "r1",
			Result: model.Failure, ExitCode: 3, HasExitCode: true, Duration: 39876543210, HasDuration: true, Reason: "lock_lost", Output: "out"}},
		{"a", model.Event{Time: time.Date(2026, 11, 30, 10, 1, 0, 0, time.UTC), Kind: model.Skip, Reason: "lock held", SkipLabel: "locked", Lock: "file", Holder: "web2", HolderPID: 9}},
		{"a", model.Event{Time: time.Date(2026, 11, 30, 10, 2, 0, 0, time.UTC), Kind: model.LockLost, Lock: "redis", Reason: "key_gone"}},
	}
	for _, tc := range held {
		h := model.NewHeld(&tc.ev, tc.source)
		r := heldToRecord(&h)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back heldRecord
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		got, ok := back.toModel()
		if ev := got.Event(); !ok || !reflect.DeepEqual(ev, tc.ev) || got.Source() != tc.source {
			t.Errorf("held record %s came back as %+v from %q (ok %v), want %+v", b, ev, got.Source(), ok, tc.ev)
		}
	}
	for _, bad := range []heldRecord{{Kind: "exploded"}, {Kind: "end", Result: "lost"}} {
		if _, ok := bad.toModel(); ok {
			t.Errorf("%+v read as a record", bad)
		}
	}
}

// A log entry whose counts are out of range (a CRC-valid entry written by
// hand) loads what it can, never panics.
func TestAfterAddedOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []int
	}{{-5, []int{}}, {-1, []int{}}, {0, []int{}}, {2, []int{2, 3}}, {3, []int{1, 2, 3}}, {99, []int{1, 2, 3}}} {
		if got := afterAdded([]int{1, 2}, []int{3}, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("afterAdded([1 2], [3], %d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

// TestWrittenByTheSetClock: a save writes the time of the clock it was
// given (the model's, which a step back of the wall clock does not move
// back), in the snapshot and in each log entry, and the load returns the
// latest.
func TestWrittenByTheSetClock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	m := newTestModel(t, dir)
	at := t0.Add(3 * time.Hour)
	m.store.SetClock(func() time.Time { return at })
	m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":1}`), Events: []model.Event{ev(model.Start, "stats", 1, 0)}})
	m.save(t) // a snapshot
	at = at.Add(time.Minute)
	m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":2}`), Events: []model.Event{ev(model.End, "stats", 1, time.Minute)}})
	m.save(t) // a log entry
	m.store.Close()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Written.Equal(at) {
		t.Fatalf("written %s, want the clock's %s", snap.Written, at)
	}
}

// A live record is held for its source's late window: the save that holds
// it writes the job's records held alone (format 5's held_only), the save
// after its verdict the job whole; each loads back as it was.
func TestLiveRecordSavesHeldOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	now := t0.Add(time.Hour)
	open := func() *testModel {
		tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now }})
		tr.Configure([]model.JobSpec{{Name: "stats", Schedule: schedule.Every(time.Hour), StaleMultiple: 2}},
			[]model.SourceSpec{{Name: "runs", Type: "runlog", Identity: "runlog:/var/log/runs.log", Runs: true, LateWindow: time.Minute}})
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		snap, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		if snap != nil {
			if err := tr.Restore(snap); err != nil {
				t.Fatal(err)
			}
		}
		return &testModel{tr: tr, store: s}
	}
	m := open()
	m.tr.Apply(model.Batch{Source: "runs", AtEnd: true, Position: json.RawMessage(`{"offset":1}`),
		Events: []model.Event{ev(model.Start, "stats", 1, 0), ev(model.End, "stats", 1, time.Second)}})
	m.save(t) // the snapshot
	logged := func(step string) string {
		t.Helper()
		before := fileSize(t, filepath.Join(dir, LogFile))
		m.save(t)
		b, err := os.ReadFile(filepath.Join(dir, LogFile))
		if err != nil {
			t.Fatal(err)
		}
		want := views(m.tr)
		m.store.Close()
		m = open()
		if got := views(m.tr); got != want {
			t.Fatalf("%s: loaded state differs:\n got %s\nwant %s", step, got, want)
		}
		m.save(t) // a snapshot again after a load
		return string(b[before:])
	}
	// A run stamped now: held for a minute, its job otherwise unchanged.
	live := func(pid int) []model.Event {
		start, end := ev(model.Start, "stats", pid, now.Sub(t0)), ev(model.End, "stats", pid, now.Sub(t0))
		return []model.Event{start, end}
	}
	m.tr.Apply(model.Batch{Source: "runs", Position: json.RawMessage(`{"offset":2}`), Events: live(2)})
	if entry := logged("held"); !strings.Contains(entry, `"held_only":true`) || strings.Contains(entry, `"runs":{"success"`) || len(entry) > 600 {
		t.Errorf("the save of a held record wrote %d bytes, want its records held alone:\n%s", len(entry), entry)
	} else if strings.Contains(entry, `"decided_until"`) || strings.Count(entry, `"host":"web1"`) != 1 || !strings.Contains(entry, `"as_before":true`) {
		t.Errorf("the save of a held record wrote what the state on disk has (format 7):\n%s", entry)
	}
	// Its verdict, a minute later: the job whole.
	now = now.Add(2 * time.Minute)
	m.tr.Apply(model.Batch{Source: "runs", AtEnd: true, Position: json.RawMessage(`{"offset":3}`)})
	if entry := logged("decided"); strings.Contains(entry, `"held_only"`) || !strings.Contains(entry, `"runs":{"success":2}`) {
		t.Errorf("the save of the verdict did not write the job whole:\n%s", entry)
	} else if strings.Contains(entry, `"sources":["runs"]`) || strings.Contains(entry, `"last_exit_code"`) {
		t.Errorf("the save of the verdict wrote the sources and exit code the state on disk has (format 7):\n%s", entry)
	}
}

// A log record of format 7 leaves out what is as the state on disk has
// it: a held-only record its decided_until, a record held of the same run
// as the one before its source, host, PID and time, a verdict's record
// its sources and last exit code. A log of format 6 or 5 meant none by
// the same absence, and still loads so.
func TestLogRecordsLeaveOutWhatIsAsBefore(t *testing.T) {
	snap := `{"jobs":{"stats":{"last_start":"2026-11-30T09:00:00Z","last_success":"2026-11-30T09:00:01Z","last_duration":1,"last_exit_code":0,` +
		`"runs":{"success":1},"sources":["runs"],"recent":[{"start":"2026-11-30T09:00:00Z","end":"2026-11-30T09:00:01Z","result":"success"}],` +
		`"decided_until":"2026-11-30T09:30:00Z"}},"end":true}`
	held := `{"jobs":{"stats":{"pending":[{"source":"runs","time":"2026-11-30T10:00:00Z","kind":"start","host":"web1","pid":2},` +
		`{"kind":"end","result":"success","exit_code":0,"as_before":true}],"held_only":true}}}`
	decided := `{"jobs":{"stats":{"last_start":"2026-11-30T10:00:00Z","last_success":"2026-11-30T10:00:00Z","runs":{"success":2},` +
		`"recent_added":[{"start":"2026-11-30T10:00:00Z","end":"2026-11-30T10:00:00Z","result":"success"}],"recent_count":2,` +
		`"decided_until":"2026-11-30T10:01:00Z"}}}`
	for _, tc := range []struct {
		name    string
		version int
		log     []string
		// want: the loaded job's sources, last duration and exit code,
		// decided_until, and records held.
		want string
	}{
		{"format 7 held", 7, []string{held}, `[runs] 1s true 0 true 2026-11-30T09:30:00Z [start runs web1 2 10:00:00; end runs web1 2 10:00:00]`},
		{"format 7 decided", 7, []string{held, decided}, `[runs] 1s true 0 true 2026-11-30T10:01:00Z []`},
		{"format 6 decided", 6, []string{decided}, `[] 0s false 0 false 2026-11-30T10:01:00Z []`},
		{"format 5 decided", 5, []string{decided}, `[] 0s false 0 false 2026-11-30T10:01:00Z []`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := func(name, kind string, entries ...string) {
				h, _ := json.Marshal(header{Format: formatName, Version: tc.version, Kind: kind, Generation: 1})
				var b []byte
				for _, e := range append([]string{string(h)}, entries...) {
					b = appendFrame(b, []byte(e))
				}
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			file(SnapshotFile, "snapshot", snap)
			file(LogFile, "log", tc.log...)
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			st, err := s.Load()
			if err != nil {
				t.Fatal(err)
			}
			j := st.Jobs["stats"]
			var held []string
			for _, h := range j.Pending {
				ev := h.Event()
				held = append(held, fmt.Sprintf("%s %s %s %d %s", ev.Kind, h.Source(), ev.Host, ev.PID, ev.Time.Format(time.TimeOnly)))
			}
			got := fmt.Sprintf("%v %gs %v %d %v %s [%s]", j.Sources, j.LastDuration, j.HasLastDuration, j.LastExitCode, j.HasLastExitCode,
				j.DecidedUntil.Format(time.RFC3339), strings.Join(held, "; "))
			if got != tc.want {
				t.Errorf("loaded\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}
