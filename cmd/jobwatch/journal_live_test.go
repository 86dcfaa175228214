package main

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/journaltest"
)

// TestJournalFollowLive: the journal source following a journal while a
// unit runs, its entries stamped when they are written (as journald
// stamps them): each run's start shows running and its end counted on the
// built binary's /metrics within 2 s of their writing. `journalctl --follow` on the same directory, started beside it, is
// the baseline: how soon the journal itself hands the entry over. It logs
// both medians and maxima, BENCHMARKS.md's figure.
func TestJournalFollowLive(t *testing.T) {
	skipShortBinary(t)
	t.Parallel()
	if _, err := journaltest.RemoteBinary(); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("journalctl"); err != nil {
		t.Fatal("journalctl not found: install the Debian package systemd")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	journal := filepath.Join(dir, "journal", "system.journal")
	h := journaltest.NewHost("web1", time.Now().Add(-time.Hour))
	// One entry before the start, so that the journal file exists.
	if err := journaltest.Append(journal, []journaltest.Entry{h.Other(time.Now(), "kernel", 0, "booted")}); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, fmt.Sprintf(`jobs:
  - name: stats
    every: 1h
sources:
  - name: systemd
    type: journal
    directory: %q
    units:
      stats.service: stats
`, filepath.Dir(journal)))
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	in.waitFor(30*time.Second, map[string]float64{`jobwatch_source_up{source="systemd",type="journal"}`: 1})

	// The baseline: journalctl following the same directory, each line a
	// MESSAGE it handed over. It shows what was written since a second
	// before it started (--lines=0 showed only what came after it had
	// opened the journal: on a loaded machine, not the first entry).
	ctx, cancel := context.WithCancel(context.Background())
	since := fmt.Sprintf("--since=@%d", time.Now().Unix()-1)
	follow := exec.CommandContext(ctx, "journalctl", "--directory="+filepath.Dir(journal), "--follow", since, "--output=cat", "--boot=all")
	out, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	read := make(chan struct{})
	defer func() { // journalctl --follow runs until it is killed
		cancel()
		<-read // its output ends with it
		follow.Wait()
	}()
	go func() {
		defer close(read)
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	handed := func(since time.Time, marker string) time.Duration {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("journalctl --follow ended")
				}
				if strings.Contains(l, marker) {
					return time.Since(since)
				}
			case <-deadline:
				t.Fatalf("journalctl --follow did not hand over %q within 10 s", marker)
			}
		}
	}

	const runs = 10
	var startShown, endShown, startFollow, endFollow []time.Duration
	for i := range runs {
		inv := journaltest.InvocationID(fmt.Sprintf("live-%d", i))
		// A start and its process's first line (which names its PID; a
		// unit that prints nothing has its start wait up to 500 ms for
		// one, startPIDWait), stamped now. Both are timed from before
		// the entries are written: systemd-journal-remote takes a few
		// milliseconds to start.
		written := time.Now()
		if err := journaltest.Append(journal, []journaltest.Entry{h.Starting(written, "stats.service", inv), h.Output(written, "stats.service", inv, 4000+i, "working")}); err != nil {
			t.Fatal(err)
		}
		startFollow = append(startFollow, handed(written, "working"))
		startShown = append(startShown, shownAfter(in, written, fmt.Sprintf("run %d in progress", i+1), func(got map[string]float64) bool {
			return got[`jobwatch_job_running{job_name="stats"}`] == 1
		}, nil))
		// Its end, stamped now: the unit finished.
		written = time.Now()
		if err := journaltest.Append(journal, []journaltest.Entry{h.Deactivated(written, "stats.service", inv), h.Finished(written, "stats.service", inv)}); err != nil {
			t.Fatal(err)
		}
		endFollow = append(endFollow, handed(written, "Finished"))
		endShown = append(endShown, shownAfter(in, written, fmt.Sprintf("run %d counted", i+1), func(got map[string]float64) bool {
			return got[`jobwatch_job_runs_total{job_name="stats",result="success"}`] == float64(i+1)
		}, nil))
	}
	for _, f := range []struct {
		what           string
		shown, follows []time.Duration
	}{{"start", startShown, startFollow}, {"end", endShown, endFollow}} {
		t.Logf("journal %s on /metrics: median %s, max %s over %d; journalctl --follow median %s, max %s",
			f.what, median(f.shown).Round(time.Millisecond), slices.Max(f.shown).Round(time.Millisecond), runs,
			median(f.follows).Round(time.Millisecond), slices.Max(f.follows).Round(time.Millisecond))
		if m := slices.Max(f.shown); m > 2*time.Second {
			t.Errorf("a run's %s shown after %s, want within 2 s", f.what, m.Round(time.Millisecond))
		}
	}
}
