package checkin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
)

// TestOutputsKeptWhileReferenced: a spool segment holding the output of one
// of a job's latest runs is kept after it has been applied, and read by its
// reference; once the job has model.MaxRecentRuns newer outputs, it goes.
// A restart remembers what the kept segments hold.
func TestOutputsKeptWhileReferenced(t *testing.T) {
	dir := t.TempDir()
	open := func() *Receiver {
		r, err := OpenReceiver(Options{Dir: dir, Now: func() time.Time { return t0 }, MaxBody: 1000, MaxSegment: 2 << 10})
		if err != nil {
			t.Fatal(err)
		}
		r.SetJobs([]string{"backup", "sync"})
		return r
	}
	r := open()
	do(r, "POST", "/ping/backup/1", "the first failure")
	for range 40 { // several segments of sync's, without output
		do(r, "GET", "/ping/sync", "")
	}
	run := func(r *Receiver, from Position, wantEvents int) (*sink, Position) {
		t.Helper()
		snk := &sink{applied: make(chan struct{}, 1000)}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		var fromJSON json.RawMessage
		if from != (Position{}) {
			fromJSON, _ = json.Marshal(from)
		}
		go func() { done <- r.Source().Run(ctx, fromJSON, snk) }()
		testproc.WaitUntil(t, 10*time.Second, fmt.Sprintf("%d events applied", wantEvents), func() bool {
			snk.mu.Lock()
			defer snk.mu.Unlock()
			n := 0
			for _, b := range snk.batches {
				n += len(b.Events)
			}
			return n >= wantEvents
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var pos Position
		if err := json.Unmarshal(snk.batches[len(snk.batches)-1].Position, &pos); err != nil {
			t.Fatal(err)
		}
		return snk, pos
	}
	snk, pos := run(r, Position{}, 41)
	ref := snk.batches[0].Events[0].OutputRef
	if segs, _ := segments(dir); len(segs) < 3 || segs[0] != 1 {
		t.Fatalf("segments %v: the first, holding backup's output, should be kept", segs)
	}
	if out, err := r.ReadOutput(ref); err != nil || out != "the first failure" {
		t.Fatalf("ReadOutput(%s) = %q, %v", ref, out, err)
	}
	r.Close()

	// After a restart: still kept, until backup has 50 newer outputs.
	r = open()
	defer r.Close()
	for i := range model.MaxRecentRuns {
		do(r, "POST", "/ping/backup/1", fmt.Sprintf("failure %d", i))
	}
	run(r, pos, model.MaxRecentRuns)
	if segs, _ := segments(dir); slices.Contains(segs, 1) {
		t.Errorf("segments %v: the first is kept though backup's output there is no longer one of its latest", segs)
	}
	if _, err := r.ReadOutput(ref); err == nil {
		t.Errorf("ReadOutput(%s) of a removed segment: no error", ref)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentName(1))); err == nil {
		t.Error("segment 1 is still there")
	}
}
