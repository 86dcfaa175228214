package journal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/journaltest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/sources"
)

// fakeSystemctl stands for systemctl show, which needs systemd as PID 1
// (not here): it prints the file services or timers of dir, as the
// properties asked name a service's or a timer's; looks counts the
// timers' answers given.
func fakeSystemctl(t *testing.T) (path string, set func(services, timers string), looks func() int) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "systemctl")
	script := fmt.Sprintf("#!/bin/sh\ncase \"$*\" in *LastTriggerUSec*) cat %[1]s/timers; echo >> %[1]s/looks;; *) exec cat %[1]s/services;; esac\n", dir)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	set = func(services, timers string) {
		for name, text := range map[string]string{"services": services, "timers": timers} {
			tmp := filepath.Join(dir, name+".tmp")
			if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	looks = func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "looks"))
		return len(b)
	}
	return path, set, looks
}

// showOf is systemctl show's answer: stats.service started by stats.timer
// at began, which fired at fired (Unix seconds).
func showOf(fired, began int64) (services, timers string) {
	return fmt.Sprintf("Id=stats.service\nTriggeredBy=stats.timer\nInactiveExitTimestamp=@%d\n\nId=backup.service\nTriggeredBy=\nInactiveExitTimestamp=\n", began),
		fmt.Sprintf("Id=stats.timer\nLastTriggerUSec=@%d\n", fired)
}

// steppedSilence makes j's silence watcher look only when told: look
// lets it ask systemctl once and returns once it has judged the answer
// (its health reported). The watcher's waker is the test's; the reader's
// waits stay real.
func steppedSilence(t *testing.T, j *Source) (look func(what string)) {
	t.Helper()
	const every = time.Hour // the watcher's waits, told from the reader's
	j.silenceEvery = every
	idle, wake := make(chan struct{}), make(chan struct{})
	j.sleep = func(ctx context.Context, d time.Duration) bool {
		if d != every {
			return sources.Sleep(ctx, d)
		}
		select { // the last look judged, or none yet
		case idle <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		select {
		case <-wake:
			return true
		case <-ctx.Done():
			return false
		}
	}
	waitIdle := func(what string) {
		t.Helper()
		// A bound for a watcher that hangs, not a measure: beside
		// stress-ng --io one fork of the stand-in systemctl took over 10 s.
		testproc.Receive(t, idle, 2*time.Minute, what)
	}
	started := false
	return func(what string) {
		t.Helper()
		if !started {
			waitIdle("the silence watcher to start")
			started = true
		}
		wake <- struct{}{}
		waitIdle(what)
	}
}

// TestJournalSilence: the service manager says stats.timer fired and
// started stats.service, and the journal shows no such start: the source
// goes down saying so (a health problem, not a missed run); once the start
// is read it is up again. A trigger the journal shows changes nothing.
// Each of the watcher's looks is stepped by the test (steppedSilence), so
// nothing depends on how long the stand-in systemctl takes to start.
func TestJournalSilence(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	inv := journaltest.InvocationID
	dir := t.TempDir()
	file := filepath.Join(dir, "system.journal")
	if err := journaltest.Append(file, jSuccessRun(h, "stats.service", inv("s1"), 0, 10)); err != nil {
		t.Fatal(err)
	}
	path, set, looks := fakeSystemctl(t)
	set(showOf(jAt(0).Unix(), jAt(0).Unix()))
	j := newJTestJournal(t, dir, nil)
	now := jAt(600)
	j.askSystemd, j.systemctl, j.silenceAfter = true, path, time.Minute
	j.now = func() time.Time { return now }
	look := steppedSilence(t, j)
	sink := &jSink{}
	jRun(t, j, nil, sink)
	jSettled(t, sink, 2, time.Minute, "the first run")
	// The watcher's first look learns the trigger; only one that moves
	// after it is expected in the journal.
	look("the watcher's first look")
	if hc, ok := sink.lastHealth(); !ok || !hc.up {
		t.Fatalf("health %+v (%v) after the first look, want up", hc, ok)
	}

	// Fired at 10:05 and started its service; the journal has nothing of it.
	set(showOf(jAt(300).Unix(), jAt(300).Unix()+1))
	look("the look at the trigger of 10:05")
	hc, _ := sink.lastHealth()
	if want := "journalctl has shown no start of stats.service, which the service manager started at 2026-11-30T10:05:01Z"; hc.up || hc.err == nil || !strings.Contains(hc.err.Error(), want) {
		t.Errorf("health up %v error %v, want down saying %q", hc.up, hc.err, want)
	}
	if n := len(sink.events()); n != 2 {
		t.Errorf("%d events, want the first run's 2 only", n)
	}
	if n := looks(); n != 2 {
		t.Errorf("the stand-in systemctl answered for the timers %d times, want 2 (a look failed?)", n)
	}
	// The start comes after all: up again at the next look.
	if err := journaltest.Append(file, jSuccessRun(h, "stats.service", inv("s2"), 301, 20)); err != nil {
		t.Fatal(err)
	}
	jSettled(t, sink, 4, time.Minute, "the second run")
	look("the look after the start was read")
	if hc, ok := sink.lastHealth(); !ok || !hc.up {
		t.Errorf("health up %v error %v after the start was read, want up", hc.up, hc.err)
	}
}
