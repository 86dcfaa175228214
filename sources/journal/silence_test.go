package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/journaltest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
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

// TestJournalSilence: the service manager says stats.timer fired and
// started stats.service, and the journal shows no such start: the source
// goes down saying so (a health problem, not a missed run); once the start
// is read it is up again. A trigger the journal shows changes nothing.
// (The waits are long: beside stress-ng --io a fork of the stand-in
// systemctl took over 10 s.)
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
	j.askSystemd, j.systemctl, j.silenceEvery, j.silenceAfter = true, path, 20*time.Millisecond, time.Minute
	j.now = func() time.Time { return now }
	sink := &jSink{}
	jRun(t, j, nil, sink)
	jSettled(t, sink, 2, time.Minute, "the first run")
	// The watcher's first look learns the trigger; only one that moves
	// after it is expected in the journal.
	testproc.WaitUntil(t, time.Minute, "the watcher's first look", func() bool { return looks() >= 1 })

	// Fired at 10:05 and started its service; the journal has nothing of it.
	set(showOf(jAt(300).Unix(), jAt(300).Unix()+1))
	testproc.WaitUntil(t, time.Minute, "down: silent", func() bool { hc, ok := sink.lastHealth(); return ok && !hc.up })
	hc, _ := sink.lastHealth()
	if want := "journalctl has shown no start of stats.service, which the service manager started at 2026-11-30T10:05:01Z"; hc.err == nil || !strings.Contains(hc.err.Error(), want) {
		t.Errorf("health error %v, want it to say %q", hc.err, want)
	}
	if n := len(sink.events()); n != 2 {
		t.Errorf("%d events, want the first run's 2 only", n)
	}
	// The start comes after all: up again.
	if err := journaltest.Append(file, jSuccessRun(h, "stats.service", inv("s2"), 301, 20)); err != nil {
		t.Fatal(err)
	}
	testproc.WaitUntil(t, time.Minute, "up again", func() bool { hc, ok := sink.lastHealth(); return ok && hc.up })
}
