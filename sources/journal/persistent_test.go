package journal

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/journaltest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

// TestPersistentTimerCatchUp: the journal a Persistent=true timer leaves
// when its host was off over two of its elapses: after the boot, systemd
// starts the service at once, late, one run for both. With persistent: the
// catch-up is the last missed elapse's run (not unexpected), the one before
// stays missed; without, the catch-up is unexpected and both are missed.
func TestPersistentTimerCatchUp(t *testing.T) {
	needJournalTools(t)
	day := func(d, h, m, s int) time.Time { return time.Date(2026, 11, d, h, m, s, 0, time.UTC) }
	inv := journaltest.InvocationID
	run := func(h *journaltest.Host, at time.Time, id string) []journaltest.Entry {
		return []journaltest.Entry{
			h.Starting(at, "backup.service", inv(id)),
			h.Deactivated(at.Add(5*time.Second), "backup.service", inv(id)),
			h.Finished(at.Add(5*time.Second), "backup.service", inv(id)),
		}
	}
	dir := t.TempDir()
	// Boot A: the 25th's elapse; the host is shut down at noon.
	bootA := journaltest.NewHost("web1", day(25, 0, 0, 0))
	bootA.BootID = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	if err := journaltest.Append(filepath.Join(dir, "system@a.journal"), run(bootA, day(25, 3, 15, 0), "p25")); err != nil {
		t.Fatal(err)
	}
	// Boot B, on the 27th at 08:00: the catch-up 31 s after it (the 26th's
	// and the 27th's elapses were missed), then every elapse on time.
	bootB := journaltest.NewHost("web1", day(27, 8, 0, 0))
	var b []journaltest.Entry
	b = append(b, run(bootB, day(27, 8, 0, 31), "catch-up")...)
	for d := 28; d <= 30; d++ {
		b = append(b, run(bootB, day(d, 3, 15, 0), fmt.Sprintf("p%d", d))...)
	}
	if err := journaltest.Append(filepath.Join(dir, "system.journal"), b); err != nil {
		t.Fatal(err)
	}
	sched, err := schedule.New(schedule.Spec{OnCalendar: []string{"*-*-* 03:15:00"}, Timezone: "UTC"}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		persistent         bool
		missed, unexpected uint64
	}{{true, 1, 0}, {false, 2, 1}} {
		now := day(30, 10, 0, 0)
		tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "elsewhere", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
		tr.Configure([]model.JobSpec{
			{Name: "backup", Schedule: sched, Grace: time.Minute, Persistent: tc.persistent, StaleMultiple: 2},
			{Name: "stats", Schedule: schedule.Every(time.Hour), StaleMultiple: 2},
		}, []model.SourceSpec{{Name: "systemd", Type: Type, Runs: true, LateWindow: DefaultLateWindow}})
		view := func() model.JobView {
			jobs, _ := tr.View()
			for _, j := range jobs {
				if j.Spec.Name == "backup" {
					return j
				}
			}
			t.Fatal("no job backup")
			return model.JobView{}
		}
		stop := jRun(t, newJTestJournal(t, dir, nil), nil, tr)
		testproc.WaitUntil(t, 20*time.Second, "five runs decided", func() bool {
			tr.DecideHeld()
			return view().RunCounts[0] == 5
		})
		stop()
		tr.Reap()
		if j := view(); j.Missed != tc.missed || j.Unexpected != tc.unexpected || j.DupCounts != [3]uint64{} {
			t.Errorf("persistent %v: missed %d, unexpected %d, duplicates %v; want %d, %d, none",
				tc.persistent, j.Missed, j.Unexpected, j.DupCounts, tc.missed, tc.unexpected)
		}
	}
}
