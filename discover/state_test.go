package discover

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"jobwatch/model"
	"jobwatch/state"
)

func TestP99FromState(t *testing.T) {
	dir := t.TempDir()
	st, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var slow, fast model.Histogram
	for i := 0; i < 200; i++ {
		fast.Observe(20)
		slow.Observe(1500) // 25 min: bucket 1800
	}
	slow.Observe(3 * 86400) // one outlier above the largest bound: not the P99
	var huge model.Histogram
	huge.Observe(2 * 86400)
	snap := &model.Snapshot{Version: model.SnapshotVersion, Jobs: map[string]model.SavedJob{
		"cron.hourly": {JobState: model.JobState{Durations: slow}},
		"fast":        {JobState: model.JobState{Durations: fast}},
		"huge":        {JobState: model.JobState{Durations: huge, LastDuration: 2 * 86400}},
		"never":       {},
	}}
	if err := st.Save(snap); err != nil {
		t.Fatal(err)
	}
	// Read while the store still holds its lock, as with a running jobwatch.
	got, err := ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	p99 := P99(got)
	want := map[string]time.Duration{"cron.hourly": 30 * time.Minute, "fast": 30 * time.Second, "huge": 48 * time.Hour}
	if len(p99) != len(want) {
		t.Errorf("P99 = %v, want %v", p99, want)
	}
	for k, v := range want {
		if p99[k] != v {
			t.Errorf("P99[%s] = %v, want %v", k, p99[k], v)
		}
	}

	h, err := Read(filepath.Join("testdata", "debian"))
	if err != nil {
		t.Fatal(err)
	}
	p99["cron.hourly"] = 2 * time.Hour
	p99["backup"] = 5 * time.Hour // has a lock: no overlap to report
	found := false
	for _, f := range Check(h, Options{Now: now, P99: p99}) {
		if f.Kind != KindNoLock {
			continue
		}
		if f.Job == "backup" {
			t.Errorf("backup has a lock: %s", f)
		}
		if f.Job == "cron.hourly" {
			found = true
			if !strings.Contains(f.Message, "runs take up to 2h (P99 in jobwatch's state) while it is scheduled every 1h: runs overlap") {
				t.Errorf("message %q", f.Message)
			}
		}
	}
	if !found {
		t.Error("no no_lock finding for cron.hourly")
	}

	if _, err := ReadState(t.TempDir()); err == nil {
		t.Error("ReadState of an empty directory: no error")
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, state.FileName), []byte(`{"version": 99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(bad); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("ReadState of a future version: %v", err)
	}
}
