package main

// Other monitors' check-ins through the real binary (docs/checkins.md,
// "Moving from another monitor"): behind the same TLS and basic auth as
// /ping/JOB, at the root too, and as fast as /ping/JOB.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/status"
)

const (
	dropinUUID   = "5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278"
	dropinHCKey  = "fqOOd6-F4MMNuCEnzTU01w"
	dropinSentry = "0123456789abcdef0123456789abcdef"
	dropinCron   = "cronitorTelemetryKey1"
	dropinConfig = `
jobs:
  - name: backup
    every: 24h
    aliases: [` + dropinUUID + `, db-backup]
  - name: burst
    every: 1h
    aliases: [burst-uuid-0000, burst-slug]
checkins:
  enabled: true
  root_paths: true
  keys:
    healthchecks: ` + dropinHCKey + `
    sentry: ` + dropinSentry + `
    cronitor: ` + dropinCron + `
`
)

// Healthchecks', Sentry's and Cronitor's lines over TLS with basic auth: none
// is taken without the password (the root's included), each is a run of
// the job its identifier is an alias of.
func TestMonitorLinesThroughBinary(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	base, client, authed, _ := startTLSJobwatch(t, bin, dir, dropinConfig)
	lines := []struct {
		method, path, body string
		code               int
	}{
		{"GET", "/ping/" + dropinUUID + "/start", "", 200},
		{"POST", "/ping/" + dropinUUID + "/0", "done", 200},
		{"GET", "/" + dropinHCKey + "/db-backup/start", "", 200},
		{"POST", "/" + dropinHCKey + "/db-backup/fail", "disk full", 200},
		{"GET", "/api/7/cron/db-backup/" + dropinSentry + "/?status=in_progress&check_in_id=4a0d4c3b2a1f4e5d8c7b6a5f4e3d2c1b", "", 202},
		{"GET", "/api/7/cron/db-backup/" + dropinSentry + "/?status=ok&check_in_id=4a0d4c3b2a1f4e5d8c7b6a5f4e3d2c1b", "", 202},
		{"GET", "/p/" + dropinCron + "/db-backup?state=run&series=r1", "", 200},
		{"GET", "/p/" + dropinCron + "/db-backup?state=complete&status_code=0&series=r1", "", 200},
	}
	for _, l := range lines {
		if code, _ := ping(t, client, l.method, base+l.path, l.body, nil); code != http.StatusUnauthorized {
			t.Errorf("%s without the password: %d, want 401", l.path, code)
		}
	}
	for _, l := range lines {
		if code, body := ping(t, authed, l.method, base+l.path, l.body, nil); code != l.code {
			t.Errorf("%s %s: %d %s, want %d", l.method, l.path, code, body, l.code)
		}
	}
	if code, _ := ping(t, authed, "GET", base+"/", "", nil); code != 200 {
		t.Errorf("the landing page with root_paths: %d", code)
	}
	testproc.EventuallyEvery(t, minWait, 100*time.Millisecond, "the runs to show on the API", func() error {
		code, body := ping(t, authed, "GET", base+"/api/v1/jobs/backup", "", nil)
		if code != 200 {
			t.Fatalf("/api/v1/jobs/backup: %d %s", code, body)
		}
		var job status.Job
		must(t, json.Unmarshal([]byte(body), &job))
		if job.Runs["success"] != 3 || job.Runs["failure"] != 1 {
			return fmt.Errorf("runs %v", job.Runs)
		}
		return nil
	})
}

// BenchmarkCheckinRoutes: check-ins a second through the binary from 32
// clients, by route, each route against /ping/JOB (today's) in the same
// run, alternating, on a fresh binary each (BENCHMARKS.md, "Check-ins").
// Run it with -benchtime=4000x, passes with JOBWATCH_BENCH_ROTATE=0..4.
func BenchmarkCheckinRoutes(b *testing.B) {
	bin := buildBinary(b)
	routes := []struct {
		name string
		urls func(base string) func(rid string, fail bool) (string, string)
	}{
		{"ping-job", func(base string) func(string, bool) (string, string) {
			return func(rid string, fail bool) (string, string) {
				return base + "/ping/burst/start?rid=" + rid, base + "/ping/burst/" + exit(fail) + "?rid=" + rid
			}
		}},
		{"hc-alias", func(base string) func(string, bool) (string, string) {
			return func(rid string, fail bool) (string, string) {
				return base + "/ping/burst-uuid-0000/start?rid=" + rid, base + "/ping/burst-uuid-0000/" + exit(fail) + "?rid=" + rid
			}
		}},
		{"hc-key-slug", func(base string) func(string, bool) (string, string) {
			return func(rid string, fail bool) (string, string) {
				return base + "/" + dropinHCKey + "/burst-slug/start?rid=" + rid, base + "/" + dropinHCKey + "/burst-slug/" + exit(fail) + "?rid=" + rid
			}
		}},
		{"sentry", func(base string) func(string, bool) (string, string) {
			return func(rid string, fail bool) (string, string) {
				u := base + "/api/7/cron/burst-slug/" + dropinSentry + "/?check_in_id=" + rid + "&status="
				if fail {
					return u + "in_progress", u + "error"
				}
				return u + "in_progress", u + "ok"
			}
		}},
		{"cronitor", func(base string) func(string, bool) (string, string) {
			return func(rid string, fail bool) (string, string) {
				u := base + "/p/" + dropinCron + "/burst-slug?series=" + rid + "&state="
				if fail {
					return u + "run", u + "fail"
				}
				return u + "run", u + "complete"
			}
		}},
	}
	// The load of a shared machine drifts during a pass: passes rotate
	// the order (JOBWATCH_BENCH_ROTATE=k starts at the k-th route), so
	// that no route is always last.
	if k, err := strconv.Atoi(os.Getenv("JOBWATCH_BENCH_ROTATE")); err == nil {
		k %= len(routes)
		routes = append(routes[k:], routes[:k]...)
	}
	for _, rt := range routes {
		b.Run(rt.name, func(b *testing.B) {
			dir := b.TempDir()
			cfg := filepath.Join(dir, "jobwatch.yml")
			testproc.WriteFile(b, cfg, dropinConfig)
			in := startJobwatch(b, bin, cfg, filepath.Join(dir, "state"), freePort(b))
			n := max(2, (b.N+1)/2*2)
			b.ResetTimer()
			_, lat, took := burstOf(b, n, 32, rt.urls("http://"+in.addr))
			b.StopTimer()
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(float64(n)/took.Seconds(), "checkins/s")
			b.ReportMetric(ms(lat[n/2]), "p50-ms")
			b.ReportMetric(ms(lat[n*99/100]), "p99-ms")
		})
	}
}

func exit(fail bool) string {
	if fail {
		return "1"
	}
	return "0"
}
