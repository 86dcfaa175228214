package main

// Fault tests of the real binary: kill -9 under load with rotations, a full
// state disk, corrupt and foreign state files, idle CPU with many sources,
// a run log that appears late, and reloads that change the sources. They
// reuse e2e_test.go's helpers (buildBinary, startJobwatch, runLog, rec).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/state"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// waitUntil polls /metrics until ok accepts the samples (bounded by minWait
// at least, as waitFor).
func (in *instance) waitUntil(within time.Duration, what string, ok func(map[string]float64) bool) map[string]float64 {
	in.t.Helper()
	var got map[string]float64
	testproc.WaitUntil(in.t, max(within, minWait), what, func() bool {
		got, _ = in.scrape()
		return ok(got)
	})
	return got
}

// runToExit runs jobwatch expecting it to exit on its own (within minWait), and
// returns its exit code and standard error.
func runToExit(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), minWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("jobwatch %s did not exit within %s (it should refuse to start)\n%s", strings.Join(args, " "), minWait, stderr.String())
	}
	return exitCode(err), stderr.String()
}

// stateFiles are the files of a state directory (format 2, and format 1's
// state.json).
var stateFiles = []string{state.SnapshotFile, state.LogFile, state.LegacyFile}

// loadStateCopy loads a state directory with the real loader, from a copy
// (the running jobwatch holds the lock of its own directory), removed once
// loaded: the waits call it at every look.
func loadStateCopy(t *testing.T, stateDir string) (*model.Snapshot, error) {
	t.Helper()
	dir, err := os.MkdirTemp("", "jobwatch-state-copy-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, name := range stateFiles {
		data, err := os.ReadFile(filepath.Join(stateDir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return st.Load()
}

// savedSource is the state of source in the state jobwatch saved last
// (loaded from a copy); nil when none is saved yet.
func savedSource(t *testing.T, stateDir, source string) (*model.SourceState, error) {
	t.Helper()
	snap, err := loadStateCopy(t, stateDir)
	if err != nil || snap == nil {
		return nil, err
	}
	return snap.Sources[source], nil
}

// waitSavedRecords waits until the saved state holds records records read
// by source: a save after they were read is over.
func waitSavedRecords(t *testing.T, stateDir, source string, records uint64) {
	t.Helper()
	testproc.Eventually(t, minWait, fmt.Sprintf("the state file to hold %d records of %s", records, source), func() error {
		s, err := savedSource(t, stateDir, source)
		switch {
		case err != nil:
			return err
		case s == nil:
			return errors.New("source not saved yet")
		case s.Records != records:
			return fmt.Errorf("%d records saved", s.Records)
		}
		return nil
	})
}

// waitReadToEnd waits until the position source saved last is the end of
// the run log at path: it has read, counted and saved all the file holds,
// so that what it counted of it is final (a record read twice would have
// been counted before the end was reached). It returns the saved state.
func waitReadToEnd(t *testing.T, stateDir, source, path string) *model.SourceState {
	t.Helper()
	var saved *model.SourceState
	testproc.Eventually(t, minWait, source+"'s saved position to reach the end of "+path, func() error {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		s, err := savedSource(t, stateDir, source)
		switch {
		case err != nil:
			return err
		case s == nil:
			return errors.New("source not saved yet")
		}
		var pos struct { // the run-log source's position (sources/runlog/tail.Position)
			Ino    uint64 `json:"ino"`
			Offset int64  `json:"offset"`
		}
		if err := json.Unmarshal(s.Position, &pos); err != nil {
			return fmt.Errorf("saved position %s: %v", s.Position, err)
		}
		if pos.Ino != fi.Sys().(*syscall.Stat_t).Ino || pos.Offset != fi.Size() {
			return fmt.Errorf("saved position %s, the file is inode %d, %d bytes", s.Position, fi.Sys().(*syscall.Stat_t).Ino, fi.Size())
		}
		saved = s
		return nil
	})
	return saved
}

// crashJobs is how many jobs the crash test's run log reports.
const crashJobs = 50

// crashWriter writes the crash test's run log: runs start/end pairs, about
// 25 runs open at any time, every run with its own PID. Every 7th run of a
// job fails. It rotates the log (logrotate style: PATH.1 -> PATH.2,
// PATH -> PATH.1, create PATH) before the chunks listed in rotateAt.
type crashWriter struct {
	path     string
	runs     int
	chunk    int // records per write
	pause    time.Duration
	rotateAt map[int]bool
	// rotated gets the chunk index after each rotation, between the rename
	// and the creation of the new file, which waits for a value on ack.
	rotated chan int
	ack     chan struct{}

	lines   []string
	records int
	want    map[string][2]int // job -> success, failure
}

// prepare generates the records and what they should count.
func (w *crashWriter) prepare() {
	w.want = map[string][2]int{}
	base := time.Now().Add(-3 * 24 * time.Hour).Truncate(time.Second)
	const open = 25
	var lines []string
	for n := 0; n < w.runs+open; n++ {
		if n < w.runs {
			job := fmt.Sprintf("job%02d", n%crashJobs)
			lines = append(lines, rec(base.Add(time.Duration(2*n)*time.Second), job, "start", 100000+n, ""))
		}
		if e := n - open; e >= 0 {
			job := fmt.Sprintf("job%02d", e%crashJobs)
			c := w.want[job]
			status, code := "success", 0
			if (e/crashJobs)%7 == 6 {
				status, code = "failure", 1
				c[1]++
			} else {
				c[0]++
			}
			w.want[job] = c
			lines = append(lines, rec(base.Add(time.Duration(2*e+1)*time.Second), job, "end", 100000+e,
				fmt.Sprintf(`"status":%q,"exit_code":%d,"duration_seconds":1`, status, code)))
		}
	}
	w.lines, w.records = lines, len(lines)
}

// run writes the records.
func (w *crashWriter) run() error {
	lines := w.lines
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for i, c := 0, 0; i < len(lines); i, c = i+w.chunk, c+1 {
		if w.rotateAt[c] {
			if err := f.Close(); err != nil {
				return err
			}
			if _, err := os.Stat(w.path + ".1"); err == nil {
				if err := os.Rename(w.path+".1", w.path+".2"); err != nil {
					return err
				}
			}
			if err := os.Rename(w.path, w.path+".1"); err != nil {
				return err
			}
			w.rotated <- c
			<-w.ack
			if f, err = os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
				return err
			}
		}
		buf.Reset()
		for _, l := range lines[i:min(i+w.chunk, len(lines))] {
			buf.WriteString(l)
			buf.WriteByte('\n')
		}
		if _, err := f.Write(buf.Bytes()); err != nil {
			return err
		}
		time.Sleep(w.pause) // paces the writes: a run log written while it is read
	}
	return f.Close()
}

// TestCrashConsistencyUnderLoad writes 200,000 records while jobwatch reads
// them, kills it with SIGKILL five times at random moments (one of them
// between a rotation's rename and create) and rotates the log twice: every record is counted
// exactly once in the end.
func TestCrashConsistencyUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test under load: not in -short")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "runs.log")
	var cfg strings.Builder
	cfg.WriteString("jobs:\n")
	// A timeout longer than the records span: the log is three days of
	// history written in seconds, so a run's end, dated a second after its
	// start, may be written after the source was at its end and its
	// decisions followed the clock (past any age rule: a job without
	// timeout: closes another host's run after stale_multiple periods).
	for i := range crashJobs {
		fmt.Fprintf(&cfg, "  - name: job%02d\n    every: 1h\n    timeout: 1w\n", i)
	}
	fmt.Fprintf(&cfg, "sources:\n  - name: runs\n    type: runlog\n    path: %s\n    format: json\n", logPath)
	cfgPath := filepath.Join(dir, "jobwatch.yml")
	testproc.WriteFile(t, cfgPath, cfg.String())
	stateDir := filepath.Join(dir, "state")

	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 0))

	w := &crashWriter{
		path:     logPath,
		runs:     100000,
		chunk:    500,
		pause:    35 * time.Millisecond,
		rotateAt: map[int]bool{130: true, 270: true},
		rotated:  make(chan int),
		ack:      make(chan struct{}),
	}
	w.prepare()
	began := time.Now()
	in := startJobwatch(t, bin, cfgPath, stateDir, freePort(t))
	done := make(chan error, 1)
	go func() { done <- w.run() }()

	// Five kills: four at random moments over the ~15 s of writing, one
	// in the middle of the second rotation.
	var kills []time.Duration
	for range 4 {
		kills = append(kills, time.Duration(500+rnd.IntN(14000))*time.Millisecond)
	}
	sort.Slice(kills, func(a, b int) bool { return kills[a] < kills[b] })
	var resumeLogs *testproc.Buffer
	const recordsKey = `jobwatch_source_records_total{source="runs"}`
	restart := func(why string, ack chan<- struct{}) {
		before, _ := in.scrape()
		in.kill(syscall.SIGKILL)
		if ack != nil {
			ack <- struct{}{}
		}
		time.Sleep(time.Duration(rnd.IntN(300)) * time.Millisecond) // paces the restart: jobwatch down for a random moment while records come
		in = startJobwatch(t, bin, cfgPath, stateDir, freePort(t))
		if ack != nil {
			resumeLogs = in.logs
		}
		after, _ := in.scrape()
		t.Logf("%6.2fs: SIGKILL and restart (%s): records_total %v before the kill, %v just after the restart",
			time.Since(began).Seconds(), why, before[recordsKey], after[recordsKey])
		// What a scrape showed was saved first: no counter goes back
		// across the kill, or Prometheus would take it for a reset.
		for k, v := range before {
			if strings.HasPrefix(k, "jobwatch_") && strings.Contains(k, "_total") {
				if a, ok := after[k]; ok && a < v {
					t.Errorf("%s went back across SIGKILL: %v before, %v after", k, v, a)
				}
			}
		}
	}
	rotations := 0
	writing := true
	for writing {
		var next <-chan time.Time
		if len(kills) > 0 {
			next = time.After(time.Until(began.Add(kills[0])))
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writing the run log: %v", err)
			}
			writing = false
		case c := <-w.rotated:
			rotations++
			t.Logf("%6.2fs: rotated before chunk %d", time.Since(began).Seconds(), c)
			if rotations == 2 {
				// Killed before the new file exists: the saved position
				// is in what is now runs.log.1 or runs.log.2.
				restart("between a rotation's rename and create", w.ack)
			} else {
				w.ack <- struct{}{}
			}
		case <-next:
			kills = kills[1:]
			restart("random moment", nil)
		}
	}
	// Kills the random schedule put after the end of writing still happen.
	for range kills {
		restart("after writing", nil)
	}
	wrote := time.Since(began)
	if rotations != 2 {
		t.Fatalf("%d rotations, want 2", rotations)
	}

	want := map[string]float64{
		`jobwatch_source_records_total{source="runs"}`:             float64(w.records),
		`jobwatch_source_parse_errors_total{source="runs"}`:        0,
		`jobwatch_source_position_resets_total{source="runs"}`:     0,
		`jobwatch_source_unknown_job_records_total{source="runs"}`: 0,
	}
	for job, c := range w.want {
		want[fmt.Sprintf(`jobwatch_job_runs_total{job_name=%q,result="success"}`, job)] = float64(c[0])
		want[fmt.Sprintf(`jobwatch_job_runs_total{job_name=%q,result="failure"}`, job)] = float64(c[1])
		want[fmt.Sprintf(`jobwatch_job_runs_total{job_name=%q,result="lost"}`, job)] = noSeries
		want[fmt.Sprintf(`jobwatch_job_duration_seconds_count{job_name=%q}`, job)] = float64(c[0] + c[1])
		want[fmt.Sprintf(`jobwatch_job_running{job_name=%q}`, job)] = 0
	}
	in.waitFor(30*time.Second, want)
	caughtUp := time.Since(began)
	if !strings.Contains(resumeLogs.String(), "resuming in a rotated file") {
		t.Errorf("no restart resumed in a rotated file")
	}

	// A clean stop and start changes nothing.
	in.kill(syscall.SIGTERM)
	in = startJobwatch(t, bin, cfgPath, stateDir, freePort(t))
	got, _ := in.scrape()
	for k, v := range want {
		if g, ok := got[k]; v == noSeries && ok {
			t.Errorf("after SIGTERM and restart: %s = %v, want no series", k, g)
		} else if v != noSeries && got[k] != v {
			t.Errorf("after SIGTERM and restart: %s = %v, want %v", k, got[k], v)
		}
	}
	t.Logf("%d records (%d runs, %d jobs), 2 rotations, 5 SIGKILLs: written in %.1fs, all counted after %.1fs",
		w.records, w.runs, crashJobs, wrote.Seconds(), caughtUp.Seconds())
}

// mountTmpfs mounts a tmpfs of the given size on a new directory, unmounted
// at cleanup. It skips the test where mounting is not permitted.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil { // a state directory must be its owner's alone
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("mounting a tmpfs: %v (the test needs root or CAP_SYS_ADMIN)", err)
		}
		t.Fatalf("mounting a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", path, err)
			}
			break
		}
	}
	// Fill the last partial page too.
	for {
		if _, err := f.Write(block[:1]); err != nil {
			break
		}
	}
}

// TestStateDiskFull puts the state directory on a tiny tmpfs and fills it:
// jobwatch keeps reading and serving, counts the failed saves, keeps the old
// state files intact and goes on showing the state they hold (so that a
// SIGKILL then makes no shown counter go back), and saves again once there
// is space; a SIGKILL after that loses nothing and counts nothing twice.
func TestStateDiskFull(t *testing.T) {
	t.Parallel()
	stateDir := mountTmpfs(t, "64k")
	bin := buildBinary(t)
	dir := t.TempDir()
	log := runLog{t, filepath.Join(dir, "runs.log")}
	cfg := filepath.Join(dir, "jobwatch.yml")
	testproc.WriteFile(t, cfg, fmt.Sprintf(e2eConfig, log.path))
	base := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	const successes = `jobwatch_job_runs_total{job_name="stats",result="success"}`
	const records = `jobwatch_source_records_total{source="runs"}`
	const failures = `jobwatch_state_save_failures_total`

	log.append(success(base, "stats", 100)...)
	in := startJobwatch(t, bin, cfg, stateDir, freePort(t))
	in.waitFor(3*time.Second, map[string]float64{successes: 1, records: 2, failures: 0})
	waitSaved := func(records uint64) {
		t.Helper()
		waitSavedRecords(t, stateDir, "runs", records)
	}
	waitSaved(2)

	// The disk fills up; records keep coming. Appends to the log succeed as
	// long as they fit in the space its last block already has, so records
	// come until a save fails: each run appended is either saved (and
	// shown) or the save of it fails, which is waited for before the next.
	fill(t, filepath.Join(stateDir, "filler"))
	total := 1 // successes written to the run log
	for total < 40 {
		log.append(success(base.Add(time.Duration(total)*time.Minute), "stats", 100+total)...)
		total++
		m := in.waitUntil(15*time.Second, fmt.Sprintf("%d records shown, or a failed save", 2*total), func(m map[string]float64) bool {
			return m[records] == float64(2*total) || m[failures] >= 1
		})
		if m[failures] >= 1 {
			break
		}
	}
	first := in.waitUntil(5*time.Second, "a failed save", func(m map[string]float64) bool { return m[failures] >= 1 })
	old := readStateFiles(t, stateDir)
	for range 2 {
		log.append(success(base.Add(time.Duration(total)*time.Minute), "stats", 100+total)...)
		total++
	}
	got := in.waitUntil(5*time.Second, "two more failed saves", func(m map[string]float64) bool { return m[failures] >= first[failures]+2 })
	// Shown: the state saved last, which a restart resumes from.
	if got[successes] != first[successes] || got[records] != first[records] || got[successes] >= float64(total) {
		t.Errorf("while the disk is full: %v successes, %v records shown (%v, %v at the first failure, %d written)", got[successes], got[records], first[successes], first[records], total)
	}
	if now := readStateFiles(t, stateDir); now != old {
		t.Errorf("the state files changed while the disk was full:\n%s\n%s", old, now)
	}
	if snap, err := loadStateCopy(t, stateDir); err != nil || float64(snap.Sources["runs"].Records) != got[records] {
		t.Errorf("the saved state does not load, or differs from the state shown (%v records): %v", got[records], err)
	}
	ents, _ := os.ReadDir(stateDir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("failed save left %s behind", e.Name())
		}
	}
	if !strings.Contains(in.logs.String(), "no space left on device") {
		t.Errorf("the failed save is not logged with its cause:\n%s", in.logs.String())
	}
	// A SIGKILL now: the restart shows what was shown before, never less
	// (issue: counters went back here when scrapes showed unsaved state).
	in.kill(syscall.SIGKILL)
	in = startJobwatch(t, bin, cfg, stateDir, freePort(t))
	if m, _ := in.scrape(); m[successes] < got[successes] || m[records] < got[records] {
		t.Errorf("after a SIGKILL while the disk is full: %v successes, %v records; shown before: %v, %v", m[successes], m[records], got[successes], got[records])
	}

	// Space is freed: the next save writes everything read meanwhile.
	if err := os.Remove(filepath.Join(stateDir, "filler")); err != nil {
		t.Fatal(err)
	}
	waitSaved(uint64(2 * total))
	stuck := in.waitUntil(15*time.Second, "saves resuming", func(m map[string]float64) bool { return m[successes] == float64(total) })[failures] // records a moment old: decided once the late window has passed
	log.append(success(base.Add(time.Hour), "stats", 300)...)
	total++
	waitSaved(uint64(2 * total))
	if got, _ := in.scrape(); got[failures] != stuck {
		t.Errorf("saves still fail after space was freed: %v failures, then %v", stuck, got[failures])
	}

	// kill -9 and restart: nothing lost, nothing counted twice.
	in.kill(syscall.SIGKILL)
	log.append(success(base.Add(2*time.Hour), "stats", 301)...)
	total++
	in = startJobwatch(t, bin, cfg, stateDir, freePort(t))
	in.waitFor(10*time.Second, map[string]float64{successes: float64(total), records: float64(2 * total), failures: 0})
	// Once the whole log is read and saved, nothing more is counted.
	if s := waitReadToEnd(t, stateDir, "runs", log.path); s.Records != uint64(2*total) {
		t.Errorf("%d records saved once the log was read to its end, want %d", s.Records, 2*total)
	}
	in.waitFor(time.Second, map[string]float64{successes: float64(total), records: float64(2 * total)})
}

// TestBadStateRefusesToStart: a state file that cannot be trusted stops
// jobwatch with an error naming it, and is left as it is; so does a state
// directory another jobwatch is using.
func TestBadStateRefusesToStart(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	log := runLog{t, filepath.Join(dir, "runs.log")}
	cfg := filepath.Join(dir, "jobwatch.yml")
	testproc.WriteFile(t, cfg, fmt.Sprintf(e2eConfig, log.path))
	base := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	log.append(success(base, "stats", 100)...)

	// A good state file to spoil.
	goodDir := filepath.Join(dir, "good")
	in := startJobwatch(t, bin, cfg, goodDir, freePort(t))
	in.waitFor(3*time.Second, map[string]float64{`jobwatch_source_records_total{source="runs"}`: 2})
	in.kill(syscall.SIGTERM)
	good, err := os.ReadFile(filepath.Join(goodDir, state.SnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	goodLog, err := os.ReadFile(filepath.Join(goodDir, state.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadStateCopy(t, goodDir); err != nil {
		t.Fatalf("the good state does not load: %v", err)
	}
	// A format-1 state.json, as jobwatch wrote before format 2.
	legacy, err := os.ReadFile("../../state/testdata/v1/data/state.json")
	if err != nil {
		t.Fatal(err)
	}
	// frame is one entry of the format-2 files (docs/state.md): length,
	// CRC-32C, JSON.
	frame := func(payload string) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
		b = binary.BigEndian.AppendUint32(b, crc32.Checksum([]byte(payload), crc32.MakeTable(crc32.Castagnoli)))
		return append(b, payload...)
	}

	for _, tc := range []struct {
		name string
		// file is the state file spoilt (with the good log beside a
		// snapshot; alone for state.json).
		file string
		// spoil makes the state directory's file (or lock) bad.
		spoil func(dir, file string) error
		want  string
	}{
		{"truncated", state.SnapshotFile, func(_, file string) error { return os.WriteFile(file, good[:len(good)/2], 0o600) }, "corrupt"},
		{"empty", state.SnapshotFile, func(_, file string) error { return os.WriteFile(file, nil, 0o600) }, "corrupt"},
		{"zeros", state.SnapshotFile, func(_, file string) error { return os.WriteFile(file, make([]byte, len(good)), 0o600) }, "corrupt"},
		{"trailing garbage", state.SnapshotFile, func(_, file string) error { return os.WriteFile(file, append(bytes.Clone(good), "}garbage"...), 0o600) }, "corrupt"},
		{"two snapshots", state.SnapshotFile, func(_, file string) error { return os.WriteFile(file, append(bytes.Clone(good), good...), 0o600) }, "corrupt"},
		{"newer format", state.SnapshotFile, func(_, file string) error {
			return os.WriteFile(file, append(frame(fmt.Sprintf(`{"format":"jobwatch-state","version":%d,"kind":"snapshot","generation":1,"jobwatch":"9.9.9"}`, state.Version+1)), frame(`{"end":true}`)...), 0o600)
		}, fmt.Sprintf("written by jobwatch 9.9.9 (state format %d)", state.Version+1)},
		{"log damaged before its end", state.LogFile, func(_, file string) error {
			entry := frame(`{"sources":{"runs":{"records":1}}}`)
			damaged := bytes.Clone(entry)
			damaged[len(damaged)-2] ^= 1
			return os.WriteFile(file, slices.Concat(goodLog, damaged, entry), 0o600)
		}, "corrupt"},
		{"log symlink", state.LogFile, func(dir, file string) error {
			target := filepath.Join(dir, "elsewhere.log")
			if err := os.WriteFile(target, goodLog, 0o600); err != nil {
				return err
			}
			return os.Symlink(target, file)
		}, "symbolic link"},
		{"format 1 null", state.LegacyFile, func(_, file string) error { return os.WriteFile(file, []byte("null"), 0o600) }, "version 0"},
		{"format 1 truncated", state.LegacyFile, func(_, file string) error { return os.WriteFile(file, legacy[:len(legacy)/2], 0o600) }, "corrupt"},
		{"format 1 of another version", state.LegacyFile, func(_, file string) error {
			return os.WriteFile(file, bytes.Replace(legacy, []byte(`"version":1`), []byte(`"version":2`), 1), 0o600)
		}, "version 2"},
		{"symlink", state.SnapshotFile, func(dir, file string) error {
			target := filepath.Join(dir, "elsewhere.snap")
			if err := os.WriteFile(target, good, 0o600); err != nil {
				return err
			}
			return os.Symlink(target, file)
		}, "symbolic link"},
		{"dangling symlink", state.SnapshotFile, func(dir, file string) error { return os.Symlink(filepath.Join(dir, "nowhere.snap"), file) }, "symbolic link"},
		{"directory", state.SnapshotFile, func(_, file string) error { return os.Mkdir(file, 0o700) }, "is a directory"},
		{"lock symlink", state.SnapshotFile, func(dir, file string) error {
			if err := os.WriteFile(file, good, 0o600); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(dir, "other-lock"), filepath.Join(dir, "lock"))
		}, "symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stateDir := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(stateDir, 0o700); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(stateDir, tc.file)
			if tc.file == state.LogFile {
				if err := os.WriteFile(filepath.Join(stateDir, state.SnapshotFile), good, 0o600); err != nil {
					t.Fatal(err)
				}
			} else if tc.file == state.SnapshotFile {
				if err := os.WriteFile(filepath.Join(stateDir, state.LogFile), goodLog, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.spoil(stateDir, file); err != nil {
				t.Fatal(err)
			}
			before := snapshotDir(t, stateDir)
			code, stderr := runToExit(t, bin, "--config.file="+cfg, "--state.path="+stateDir, "--web.listen-address="+freePort(t))
			if code == 0 {
				t.Errorf("exit code 0, want non-zero\n%s", stderr)
			}
			path := file
			if tc.name == "lock symlink" {
				path = filepath.Join(stateDir, "lock")
			}
			if !strings.Contains(stderr, path) || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr does not name %s and say %q:\n%s", path, tc.want, stderr)
			}
			if after := snapshotDir(t, stateDir); after != before {
				t.Errorf("the refused state directory changed:\nbefore: %s\nafter:  %s", before, after)
			}
		})
	}

	t.Run("in use", func(t *testing.T) {
		stateDir := filepath.Join(t.TempDir(), "state")
		first := startJobwatch(t, bin, cfg, stateDir, freePort(t))
		first.waitFor(3*time.Second, map[string]float64{`jobwatch_source_records_total{source="runs"}`: 2})
		code, stderr := runToExit(t, bin, "--config.file="+cfg, "--state.path="+stateDir, "--web.listen-address="+freePort(t))
		if code == 0 || !strings.Contains(stderr, stateDir) || !strings.Contains(stderr, "in use") {
			t.Errorf("second jobwatch on %s: exit %d, want non-zero and \"in use\":\n%s", stateDir, code, stderr)
		}
		// The first one goes on undisturbed.
		log.append(success(base.Add(time.Hour), "stats", 101)...)
		first.waitFor(3*time.Second, map[string]float64{`jobwatch_source_records_total{source="runs"}`: 4})
		first.kill(syscall.SIGTERM)
		if code := first.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("first jobwatch: exit %d after SIGTERM", code)
		}
	})
}

// readStateFiles describes the state files of a directory: names, sizes
// and contents' hashes.
func readStateFiles(t *testing.T, dir string) string {
	t.Helper()
	var parts []string
	for _, name := range stateFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, fmt.Sprintf("%s %d sha256:%x", name, len(data), sha256.Sum256(data)))
	}
	return strings.Join(parts, "; ")
}

// snapshotDir describes a directory's entries but the lock file (created
// before the state is read): names, kinds, sizes, link targets and contents'
// hashes.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, e := range ents {
		if e.Name() == "lock" && e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		d := fmt.Sprintf("%s %v %d", e.Name(), fi.Mode(), fi.Size())
		if fi.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			d += " -> " + target
		} else if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			d += fmt.Sprintf(" sha256:%x", sha256.Sum256(data))
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, "; ")
}

// cpuTime returns a process's user+system CPU time from /proc/PID/stat, in
// clock ticks (USER_HZ, 100 a second on Linux).
func cpuTime(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name, which is in parentheses: state is
	// field 3, utime 14, stime 15.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("parsing /proc/%d/stat: %q", pid, data)
	}
	return utime + stime
}

const userHZ = 100

// deletedFiles lists the process's open file descriptors that point to
// deleted files.
func deletedFiles(t *testing.T, pid int) (open int, deleted []string) {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if strings.HasSuffix(target, " (deleted)") {
			deleted = append(deleted, e.Name()+" -> "+target)
		}
	}
	return len(ents), deleted
}

// TestIdleCPUManySources runs jobwatch on 300 run logs and measures its CPU
// use while nothing is written; then rotates and deletes some of the logs
// and checks that no deleted file is kept open.
func TestIdleCPUManySources(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s measurement: not in -short")
	}
	const nSources, nJobs = 300, 30
	bin := buildBinary(t)
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	logs := make([]runLog, nSources)
	var cfg strings.Builder
	cfg.WriteString("jobs:\n")
	for j := range nJobs {
		fmt.Fprintf(&cfg, "  - name: job%02d\n    every: 1h\n", j)
	}
	cfg.WriteString("sources:\n")
	for i := range nSources {
		logs[i] = runLog{t, filepath.Join(logDir, fmt.Sprintf("run%03d.log", i))}
		logs[i].append(success(base.Add(time.Duration(i)*time.Second), fmt.Sprintf("job%02d", i%nJobs), 1000+i)...)
		fmt.Fprintf(&cfg, "  - name: src%03d\n    type: runlog\n    path: %s\n    format: json\n", i, logs[i].path)
	}
	cfgPath := filepath.Join(dir, "jobwatch.yml")
	testproc.WriteFile(t, cfgPath, cfg.String())
	in := startJobwatch(t, bin, cfgPath, filepath.Join(dir, "state"), freePort(t))
	want := map[string]float64{}
	for i := range nSources {
		want[fmt.Sprintf(`jobwatch_source_up{source="src%03d",type="runlog"}`, i)] = 1
		want[fmt.Sprintf(`jobwatch_source_records_total{source="src%03d"}`, i)] = 2
	}
	for j := range nJobs {
		want[fmt.Sprintf(`jobwatch_job_runs_total{job_name="job%02d",result="success"}`, j)] = nSources / nJobs
	}
	in.waitFor(10*time.Second, want)
	// Every source has read its log to the end and saved it (the last
	// state save that reading causes), and is up (its first health check).
	stateDir := filepath.Join(dir, "state")
	testproc.Eventually(t, minWait, "every source's saved position at the end of its log", func() error {
		snap, err := loadStateCopy(t, stateDir)
		if err != nil || snap == nil {
			return fmt.Errorf("loading the state: %v", err)
		}
		for i := range nSources {
			fi, err := os.Stat(logs[i].path)
			if err != nil {
				return err
			}
			s := snap.Sources[fmt.Sprintf("src%03d", i)]
			var pos struct{ Offset int64 } // the run-log source's position (sources/runlog/tail.Position)
			if s == nil || json.Unmarshal(s.Position, &pos) != nil || pos.Offset != fi.Size() {
				return fmt.Errorf("src%03d not saved at the end of its log", i)
			}
		}
		return nil
	})

	pid := in.cmd.Process.Pid
	const window = 10 * time.Second
	c0, t0 := cpuTime(t, pid), time.Now()
	time.Sleep(window) // spans the measurement: jobwatch idle for window
	c1, t1 := cpuTime(t, pid), time.Now()
	cpu := float64(c1-c0) / userHZ
	pct := 100 * cpu / t1.Sub(t0).Seconds()
	t.Logf("idle with %d run-log sources: %.2f s CPU (utime+stime) in %.1f s = %.2f%% of one core", nSources, cpu, t1.Sub(t0).Seconds(), pct)
	if pct >= 5 {
		t.Errorf("idle CPU %.2f%% of one core with %d sources, want < 5%%", pct, nSources)
	}

	openBefore, deleted := deletedFiles(t, pid)
	if len(deleted) > 0 {
		t.Fatalf("deleted files open before any rotation: %v", deleted)
	}
	// 0-4: rename and create, then the rotated file is deleted.
	// 5-9: deleted, not recreated.
	// 10-14: renamed, not recreated, then the renamed file is deleted.
	for i := range 15 {
		p := logs[i].path
		switch {
		case i < 5:
			must(t, os.Rename(p, p+".1"))
			logs[i].append(success(base.Add(time.Hour), fmt.Sprintf("job%02d", i%nJobs), 2000+i)...)
		case i < 10:
			must(t, os.Remove(p))
		default:
			must(t, os.Rename(p, p+".1"))
		}
	}
	for i := range 5 {
		want[fmt.Sprintf(`jobwatch_source_records_total{source="src%03d"}`, i)] = 4
		want[fmt.Sprintf(`jobwatch_job_runs_total{job_name="job%02d",result="success"}`, i)]++
	}
	// The deleted and renamed logs' health is checked below, once they are
	// gone: whether their sources are up already at this point is a race.
	for i := 5; i < 15; i++ {
		delete(want, fmt.Sprintf(`jobwatch_source_up{source="src%03d",type="runlog"}`, i))
	}
	in.waitFor(30*time.Second, want)
	// The rotations and deletions are seen before the rotated files go:
	// 0-4 rotated, 5-9 deleted (their log lines), 10-14 renamed and still
	// held open under their new name.
	testproc.Eventually(t, minWait, "the rotations and deletions seen", func() error {
		logs := in.logs.String()
		for i := range 15 {
			switch {
			case i < 5 && !strings.Contains(logs, fmt.Sprintf(`msg="file rotated" logged_source=src%03d `, i)):
				return fmt.Errorf("src%03d: no rotation logged", i)
			case i >= 5 && i < 10 && !strings.Contains(logs, fmt.Sprintf(`msg="file deleted; waiting for it to come back" logged_source=src%03d `, i)):
				return fmt.Errorf("src%03d: no deletion logged", i)
			}
		}
		return nil
	})
	for i := 10; i < 15; i++ {
		if p := logs[i].path + ".1"; !testproc.HoldsOpen(pid, p) {
			t.Errorf("%s, renamed, is not followed", p)
		}
	}
	for i := range 15 {
		if i < 5 || i >= 10 {
			must(t, os.Remove(logs[i].path+".1"))
		}
	}
	removed := time.Now()
	testproc.Eventually(t, 15*time.Second, "the deleted files closed", func() error {
		if _, deleted := deletedFiles(t, pid); len(deleted) > 0 {
			return errors.New("still open:\n" + strings.Join(deleted, "\n"))
		}
		return nil
	})
	open, _ := deletedFiles(t, pid)
	t.Logf("deleted files closed %v after their deletion; %d open file descriptors before the rotations, %d after", time.Since(removed).Round(10*time.Millisecond), openBefore, open)
	if open > openBefore {
		t.Errorf("%d open file descriptors after rotating and deleting logs, %d before", open, openBefore)
	}
	// The deleted logs are down, the rest up.
	for i := 5; i < 15; i++ {
		want[fmt.Sprintf(`jobwatch_source_up{source="src%03d",type="runlog"}`, i)] = 0
	}
	in.waitFor(30*time.Second, want)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSourceFileAppearsLater: a run log that does not exist yet (in an
// existing directory, or in one not created yet) is a source that is down;
// once the file appears its records are read and the source is up (within
// about 3 s on an idle machine; the test logs how long it took).
func TestSourceFileAppearsLater(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	later := runLog{t, filepath.Join(dir, "later.log")}
	nested := runLog{t, filepath.Join(dir, "not", "yet", "runs.log")}
	cfg := filepath.Join(dir, "jobwatch.yml")
	testproc.WriteFile(t, cfg, fmt.Sprintf(`
jobs:
  - name: stats
    every: 1h
  - name: backup
    every: 1h
sources:
  - name: later
    type: runlog
    path: %s
    format: json
  - name: nested
    type: runlog
    path: %s
    format: json
`, later.path, nested.path))
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	// Past the first health checks: each source logs that its file does
	// not exist yet.
	testproc.WaitUntil(t, minWait, "both sources' first health checks logged", func() bool {
		logs := in.logs.String()
		return strings.Contains(logs, `msg="run log does not exist yet; waiting for it" logged_source=later `) &&
			strings.Contains(logs, `msg="run log does not exist yet; waiting for it" logged_source=nested `)
	})
	in.waitFor(time.Second, map[string]float64{
		`jobwatch_source_up{source="later",type="runlog"}`:  0,
		`jobwatch_source_up{source="nested",type="runlog"}`: 0,
		`jobwatch_source_records_total{source="later"}`:     0,
		`jobwatch_source_records_total{source="nested"}`:    0,
	})
	base := time.Now().Add(-time.Hour).Truncate(time.Second)

	for _, tc := range []struct {
		log  runLog
		name string
		job  string
	}{{later, "later", "stats"}, {nested, "nested", "backup"}} {
		must(t, os.MkdirAll(filepath.Dir(tc.log.path), 0o755))
		appeared := time.Now()
		tc.log.append(success(base, tc.job, 100)...)
		// About 3 s on an idle machine (a missing directory is polled each
		// second, health is checked each second, a scrape shows the state
		// saved at most a second later); the bound only stops a hang.
		in.waitFor(15*time.Second, map[string]float64{
			fmt.Sprintf(`jobwatch_source_up{source=%q,type="runlog"}`, tc.name):          1,
			fmt.Sprintf(`jobwatch_source_records_total{source=%q}`, tc.name):             2,
			fmt.Sprintf(`jobwatch_job_runs_total{job_name=%q,result="success"}`, tc.job): 1,
		})
		t.Logf("%s: read and up %v after the file appeared", tc.name, time.Since(appeared).Round(10*time.Millisecond))
	}
	// Nothing is read twice after a restart, and the sources are up again.
	in.kill(syscall.SIGTERM)
	in = startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	in.waitFor(15*time.Second, map[string]float64{
		`jobwatch_source_up{source="later",type="runlog"}`:            1,
		`jobwatch_source_up{source="nested",type="runlog"}`:           1,
		`jobwatch_job_runs_total{job_name="stats",result="success"}`:  1,
		`jobwatch_job_runs_total{job_name="backup",result="success"}`: 1,
	})
}

// reload asks jobwatch to reload its config over HTTP and returns the
// status code and message.
func (in *instance) reload() (int, string) {
	in.t.Helper()
	resp, err := http.Post("http://"+in.addr+"/-/reload", "", nil)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

// TestReloadChangesSources: a reload that adds a source and removes another,
// while a backlog is being read, keeps the counters of the jobs that stay,
// reads on from where the kept source was, and never the removed one again;
// failed reloads leave the running sources reading.
func TestReloadChangesSources(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	log1 := runLog{t, filepath.Join(dir, "one.log")}
	log2 := runLog{t, filepath.Join(dir, "two.log")}
	log3 := runLog{t, filepath.Join(dir, "three.log")}
	cfg := filepath.Join(dir, "jobwatch.yml")
	const jobs = "jobs:\n  - name: stats\n    every: 1h\n  - name: backup\n    every: 1h\nsources:\n"
	source := func(name, path string) string {
		return fmt.Sprintf("  - name: %s\n    type: runlog\n    path: %s\n    format: json\n", name, path)
	}
	cfgA := jobs + source("one", log1.path) + source("two", log2.path)
	cfgB := jobs + source("one", log1.path) + source("three", log3.path)
	testproc.WriteFile(t, cfg, cfgA)
	stateDir := filepath.Join(dir, "state")
	base := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	pid := 100
	runs := func(n int, job string) []string {
		var lines []string
		for range n {
			lines = append(lines, success(base.Add(time.Duration(pid)*time.Second), job, pid)...)
			pid++
		}
		return lines
	}
	const (
		stats   = `jobwatch_job_runs_total{job_name="stats",result="success"}`
		backup  = `jobwatch_job_runs_total{job_name="backup",result="success"}`
		recOne  = `jobwatch_source_records_total{source="one"}`
		recTwo  = `jobwatch_source_records_total{source="two"}`
		recThr  = `jobwatch_source_records_total{source="three"}`
		upTwo   = `jobwatch_source_up{source="two",type="runlog"}`
		upThr   = `jobwatch_source_up{source="three",type="runlog"}`
		current = `jobwatch_config_last_reload_successful`
	)

	log1.append(runs(3, "stats")...)
	log2.append(runs(2, "backup")...)
	log3.append(runs(1, "backup")...)
	log3.append(runs(1, "stats")...)
	in := startJobwatch(t, bin, cfg, stateDir, freePort(t))
	in.waitFor(3*time.Second, map[string]float64{stats: 3, backup: 2, recOne: 6, recTwo: 4, upTwo: 1})

	// A backlog of 20,000 records on the kept source, and the reload
	// right away, while it is being read.
	log1.append(runs(10000, "stats")...)
	testproc.WriteFile(t, cfg, cfgB)
	if code, msg := in.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, msg)
	}
	got := in.waitFor(10*time.Second, map[string]float64{
		stats:   10003 + 1, // one.log, read on from where it was, and three.log
		backup:  2 + 1,     // kept from two.log, and three.log
		recOne:  20006,
		recThr:  4,
		upThr:   1,
		current: 1,
	})
	for _, k := range []string{recTwo, upTwo} {
		if _, ok := got[k]; ok {
			t.Errorf("%s still exported after the source was removed", k)
		}
	}
	// The removed source is not read any more; the kept one is.
	log2.append(runs(1, "backup")...)
	log1.append(runs(1, "stats")...)
	in.waitFor(3*time.Second, map[string]float64{stats: 10005, recOne: 20008})
	testproc.WaitUntil(t, minWait, "the removed source's file closed", func() bool { return !testproc.HoldsOpen(in.cmd.Process.Pid, log2.path) })
	got = in.waitFor(time.Second, map[string]float64{backup: 3, stats: 10005, recOne: 20008})

	// Reloads that fail keep the running config, and its sources reading.
	for _, bad := range []struct {
		name  string
		write func()
		want  string
	}{
		{"yaml syntax", func() { testproc.WriteFile(t, cfg, cfgB+"  - name: [\n") }, "yaml"},
		{"unknown source type", func() { testproc.WriteFile(t, cfg, cfgB+"  - name: four\n    type: carrier-pigeon\n") }, "carrier-pigeon"},
		{"config file gone", func() { must(t, os.Remove(cfg)) }, "no such file"},
	} {
		bad.write()
		if code, msg := in.reload(); code != http.StatusInternalServerError || !strings.Contains(msg, bad.want) {
			t.Errorf("reload with %s: %d %q, want 500 mentioning %q", bad.name, code, msg, bad.want)
		}
		log1.append(runs(1, "stats")...)
		log3.append(runs(1, "backup")...)
		in.waitFor(3*time.Second, map[string]float64{current: 0, recThr: got[recThr] + 2, recOne: got[recOne] + 2})
		got, _ = in.scrape()
	}
	if got[stats] != 10008 || got[backup] != 6 {
		t.Errorf("after the failed reloads: stats %v, backup %v; want 10008, 6", got[stats], got[backup])
	}

	// kill -9 and a restart with the new config: nothing read twice. What
	// the last scrape showed is saved.
	waitSavedRecords(t, stateDir, "one", uint64(got[recOne]))
	waitSavedRecords(t, stateDir, "three", uint64(got[recThr]))
	testproc.WriteFile(t, cfg, cfgB)
	in.kill(syscall.SIGKILL)
	in = startJobwatch(t, bin, cfg, stateDir, freePort(t))
	in.waitFor(3*time.Second, map[string]float64{stats: 10008, backup: 6, recOne: got[recOne], recThr: got[recThr], current: 1})

	// A source removed and later added again goes on from its saved
	// position: the run written to it meanwhile is counted, the ones
	// counted before are not counted again.
	testproc.WriteFile(t, cfg, cfgA)
	if code, msg := in.reload(); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, msg)
	}
	in.waitFor(3*time.Second, map[string]float64{recTwo: 6, backup: 7})
	// Once two.log is read to its end and saved, nothing more is counted.
	if s := waitReadToEnd(t, stateDir, "two", log2.path); s.Records != 6 {
		t.Errorf("%d records of two.log saved once it was read to its end, want 6", s.Records)
	}
	in.waitFor(time.Second, map[string]float64{recTwo: 6, backup: 7})
}
