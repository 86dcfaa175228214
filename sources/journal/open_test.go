package journal

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
)

// Runs whose end never comes are followed up to model.MaxOpenRuns; beyond
// it the oldest is forgotten, and the saved position stays bounded and in
// one order.
func TestOpenRunsAreBounded(t *testing.T) {
	j, err := New("systemd", Config{Cron: []CronMatch{{Match: "stats", Job: "stats"}}}, sources.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	sink := &jSink{}
	r := j.newReader(nil, sink)
	const n = model.MaxOpenRuns + 3
	for i := range n {
		e := journalEntry{Hostname: jfield{[]byte("web1"), true}, PID: jfield{fmt.Append(nil, 1000+i), true},
			SyslogIdentifier: jfield{[]byte("CRON"), true}, Message: jfield{[]byte("(root) CMD (stats)"), true}, rt: int64(1e6 + i)}
		r.pending++ // read, so that flush hands the batch over
		r.apply(&e)
	}
	r.flush(false)
	if len(r.open) != model.MaxOpenRuns {
		t.Fatalf("%d runs followed, want %d", len(r.open), model.MaxOpenRuns)
	}
	for i := range 3 {
		if _, ok := r.open[fmt.Sprintf("cron:web1:%d", 1000+i)]; ok {
			t.Errorf("run %d, among the oldest, still followed", i)
		}
	}
	var p journalPosition
	if err := json.Unmarshal(sink.position(), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Open) != model.MaxOpenRuns || p.Open[0].ID != "cron:web1:1003" || p.Open[len(p.Open)-1].ID != fmt.Sprintf("cron:web1:%d", 1000+n-1) {
		t.Fatalf("position holds %d runs, from %s to %s", len(p.Open), p.Open[0].ID, p.Open[len(p.Open)-1].ID)
	}
	if got := len(sink.events()); got != n {
		t.Errorf("%d start events, want %d", got, n)
	}
}
