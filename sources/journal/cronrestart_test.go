package journal

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/journaltest"
)

// A cron run started before a restart (-L 7: its CMD line from the job's
// process) ends after it with the END line of cron's child, which names
// only the command: the saved run, with its command's hash (never the
// command), is found again, and the run ends once, with its result.
func TestCronRunAcrossRestart(t *testing.T) {
	needJournalTools(t)
	h := journaltest.NewHost("web1", jBoot0)
	dir := t.TempDir()
	file := filepath.Join(dir, "system.journal")
	cron := []CronMatch{{Match: `stats\.sh`, Job: "stats"}}
	cmd := "/usr/local/bin/stats.sh --password=hunter2"
	if err := journaltest.Append(file, []journaltest.Entry{h.Cron(jAt(0), 6001, "(root) CMD ("+cmd+")")}); err != nil {
		t.Fatal(err)
	}
	sink1 := &jSink{}
	stop := jRun(t, newJTestJournal(t, dir, cron), nil, sink1)
	jSettled(t, sink1, 1, 10*time.Second, "the start")
	stop()
	pos := sink1.position()
	if strings.Contains(string(pos), "hunter2") {
		t.Errorf("the saved position holds the command: %s", pos)
	}
	var p journalPosition
	if err := json.Unmarshal(pos, &p); err != nil || len(p.Open) != 1 || p.Open[0].Cmd == 0 {
		t.Fatalf("position %s (%v): want the run open with its command's hash", pos, err)
	}

	if err := journaltest.Append(file, []journaltest.Entry{
		h.Cron(jAt(5), 6000, "(CRON) error (grandchild #6001 failed with exit status 3)"),
		h.Cron(jAt(5), 6000, "(root) END ("+cmd+")"),
	}); err != nil {
		t.Fatal(err)
	}
	sink2 := &jSink{}
	jRun(t, newJTestJournal(t, dir, cron), pos, sink2)
	jSettled(t, sink2, 1, 10*time.Second, "the end")
	jCompare(t, sink2.events(), []string{"10:00:05 end stats host=web1 pid=6001 run=cron:web1:6001 failure exit=3 took=5s"})

	// Without the error line (-L 3 at that cron, level not known: a
	// success), the END alone finds the run by its command.
	if err := journaltest.Append(file, []journaltest.Entry{h.Cron(jAt(60), 6101, "(root) CMD ("+cmd+")")}); err != nil {
		t.Fatal(err)
	}
	sink3 := &jSink{}
	stop = jRun(t, newJTestJournal(t, dir, cron), sink2.position(), sink3)
	jSettled(t, sink3, 1, 10*time.Second, "the second start")
	stop()
	if err := journaltest.Append(file, []journaltest.Entry{h.Cron(jAt(62), 6100, "(root) END ("+cmd+")")}); err != nil {
		t.Fatal(err)
	}
	sink4 := &jSink{}
	jRun(t, newJTestJournal(t, dir, cron), sink3.position(), sink4)
	jSettled(t, sink4, 1, 10*time.Second, "the second end")
	jCompare(t, sink4.events(), []string{"10:01:02 end stats host=web1 pid=6101 run=cron:web1:6101 success took=2s"})
}
