package locks

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobwatch/jobwatch/collector"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/status"
)

// TestLockObservationsRendered: the lock states a round reports are shown
// by the collector, the JSON API and a job's status page through their
// registered kind, which none of them names.
func TestLockObservationsRendered(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tr := model.New(model.Options{Now: func() time.Time { return now }})
	tr.Configure([]model.JobSpec{{Name: "stats"}, {Name: "backup"}, {Name: "nightly"}}, []model.SourceSpec{{Name: "locks", Type: Type}})
	tr.Apply(model.Batch{Source: "locks", Observations: observations([]State{
		{Job: "stats", Lock: "/run/stats.lock", Kind: kindFlock, Held: true, Holder: "pid 4300", Alive: HolderDead, HeldSince: now.Add(-2 * time.Minute)},
		{Job: "backup", Lock: "backup", Kind: kindRedis, Held: true, Holder: "db1", HasTTL: true, TTL: time.Minute, ProbeErrors: 2},
		{Job: "nightly", Lock: "nightly", Kind: kindMySQL, ProbeErrors: 1},
	})})
	c := collector.NewSources(tr, func() time.Time { return now })
	want := `
# HELP jobwatch_lock_expires For a held Redis lock key: 1 when it has a TTL, 0 when it never expires.
# TYPE jobwatch_lock_expires gauge
jobwatch_lock_expires{job_name="backup",lock="backup"} 1
# HELP jobwatch_lock_held 1 while the job's lock is held (lock: the configured path, key or lock name).
# TYPE jobwatch_lock_held gauge
jobwatch_lock_held{job_name="backup",lock="backup"} 1
jobwatch_lock_held{job_name="nightly",lock="nightly"} 0
jobwatch_lock_held{job_name="stats",lock="/run/stats.lock"} 1
# HELP jobwatch_lock_held_seconds How long the lock has been held: since its holder process started, the lock file was written, or jobwatch first saw it held.
# TYPE jobwatch_lock_held_seconds gauge
jobwatch_lock_held_seconds{job_name="stats",lock="/run/stats.lock"} 120
# HELP jobwatch_lock_holder_alive 1 when the lock's holder is known to be alive, 0 when known to be dead (a stale lock: every run will skip); absent when not held or unknown.
# TYPE jobwatch_lock_holder_alive gauge
jobwatch_lock_holder_alive{job_name="stats",lock="/run/stats.lock"} 0
# HELP jobwatch_lock_holder_info Who holds the lock (holder: pid 4242, the Redis value, conn 17 from 10.0.0.5); always 1.
# TYPE jobwatch_lock_holder_info gauge
jobwatch_lock_holder_info{holder="db1",job_name="backup",lock="backup"} 1
jobwatch_lock_holder_info{holder="pid 4300",job_name="stats",lock="/run/stats.lock"} 1
# HELP jobwatch_lock_probe_errors_total Probes of the lock that failed (server down, permission denied) since jobwatch started.
# TYPE jobwatch_lock_probe_errors_total counter
jobwatch_lock_probe_errors_total{job_name="backup",lock="backup"} 2
jobwatch_lock_probe_errors_total{job_name="nightly",lock="nightly"} 1
jobwatch_lock_probe_errors_total{job_name="stats",lock="/run/stats.lock"} 0
# HELP jobwatch_lock_ttl_seconds Remaining lease of a held Redis lock key.
# TYPE jobwatch_lock_ttl_seconds gauge
jobwatch_lock_ttl_seconds{job_name="backup",lock="backup"} 60
`
	names := []string{"jobwatch_lock_expires", "jobwatch_lock_held", "jobwatch_lock_held_seconds", "jobwatch_lock_holder_alive", "jobwatch_lock_holder_info", "jobwatch_lock_probe_errors_total", "jobwatch_lock_ttl_seconds"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	jobs, srcs := tr.View()
	rep := status.Build(jobs, srcs, now)
	byName := map[string]status.Job{}
	for _, j := range rep.Jobs {
		byName[j.Name] = j
	}
	for name, want := range map[string]string{
		"stats":   `{"locks":[{"held":true,"held_seconds":120,"holder":"pid 4300","holder_alive":false,"kind":"flock","lock":"/run/stats.lock"}]}`,
		"backup":  `{"locks":[{"held":true,"holder":"db1","holder_alive":null,"kind":"redis","lock":"backup","ttl_seconds":60}]}`,
		"nightly": `{"locks":[{"held":false,"holder_alive":null,"kind":"mysql","lock":"nightly"}]}`,
	} {
		got, err := json.Marshal(byName[name].Observations)
		if err != nil || string(got) != want {
			t.Errorf("%s's observations in the JSON API: %s (%v), want %s", name, got, err, want)
		}
	}
	for name, want := range map[string]string{
		"stats":   `<h2>Locks</h2><ul><li><code>/run/stats.lock</code> (flock): held by pid 4300 <b class="down">who is gone</b> for 2m00s</li></ul>`,
		"backup":  `<li><code>backup</code> (redis): held by db1, expires in 1m00s</li>`,
		"nightly": `<li><code>nightly</code> (mysql): free</li>`,
	} {
		j := byName[name]
		var b bytes.Buffer
		if err := status.WriteJob(&b, rep, &j, nil, status.PageOptions{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s's page lacks %s:\n%s", name, want, b.String())
		}
	}
}
