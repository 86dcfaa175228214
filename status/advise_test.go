package status

import (
	"bytes"
	"strings"
	"testing"
)

func TestAdvise(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	base := func(timeout *float64, period float64, d *Durations) Job {
		return Job{Name: "j", TimeoutSeconds: timeout, PeriodSeconds: period, Durations: d}
	}
	withTTL := func(j Job, ttl float64) Job { j.LockTTLSeconds = &ttl; return j }
	many := &Durations{Count: 100, P50: 40, P99: 100, Max: 130}
	for _, tc := range []struct {
		name         string
		job          Job
		timeout, ttl float64
		note         string
	}{
		{"too few", base(nil, 600, &Durations{Count: 19, P50: 1, P99: 2, Max: 3}), 0, 0, "too few finished runs with a duration (19 of 20) for advice"},
		{"none yet", base(nil, 600, nil), 0, 0, "too few finished runs with a duration (0 of 20) for advice"},
		{"no timeout", base(nil, 600, many), 300, 300, "no timeout: a hung run holds its lock forever; set timeout: 5m"},
		{"tight", base(f(120), 600, many), 300, 300, "timeout 2m is below 1.5 × P99 (1m40s): healthy slow runs get killed; raise it to 5m"},
		{"ok", base(f(300), 600, many), 300, 300, "ok"},
		{"outlasts period", base(f(300), 60, many), 300, 300, "P99 1m40s outlasts the period 1m: without a lock, runs overlap"},
		{"hours", base(f(9000), 86400, &Durations{Count: 30, P50: 3000, P99: 4000, Max: 5000}), 14400, 10800, "ok"},

		// The configured lease, from the run records.
		{"lock TTL too few runs", withTTL(base(f(300), 600, &Durations{Count: 3, P50: 100, P99: 200, Max: 200}), 10), 0, 0,
			"too few finished runs with a duration (3 of 20) for advice"},
		{"lock TTL shorter than the longest run", withTTL(base(f(300), 600, many), 60), 300, 300,
			"lock TTL 1m is shorter than the longest run (2m10s): the lock lasts through a run only because jobwatch run renews it every 20s; " +
				"if the wrapper is SIGKILLed or cannot renew it for 1m (host stalled, Redis unreachable), the key expires while the job runs " +
				"and another host starts a second copy; 5m outlasts the longest run"},
		{"lock TTL below 1.5 x the longest run", withTTL(base(f(300), 600, many), 180), 300, 300,
			"lock TTL 3m is below 1.5 × the longest run (2m10s): if the wrapper is SIGKILLed or cannot renew it (host stalled, Redis unreachable), " +
				"a run a little longer than any so far outlives the key and another host starts a second copy; 5m leaves room"},
		{"lock TTL at 1.5 x the longest run", withTTL(base(f(300), 600, many), 195), 300, 300, "ok"},
		{"lock TTL 2 x the timeout", withTTL(base(f(300), 600, many), 600), 300, 300, "ok"},
		{"lock TTL outlasts the period", withTTL(base(f(300), 600, many), 7200), 300, 300,
			"lock TTL 2h outlasts the period 10m: a host that dies holding the lock makes every other host skip for up to 2h (12 runs); 5m is enough"},
		{"lock TTL one period over", withTTL(base(f(300), 600, many), 900), 300, 300,
			"lock TTL 15m outlasts the period 10m: a host that dies holding the lock makes every other host skip for up to 15m (1 run); 5m is enough"},
		{"lock TTL over the period but needed", withTTL(base(f(300), 60, many), 300), 300, 300,
			"P99 1m40s outlasts the period 1m: without a lock, runs overlap"},
		{"lock TTL sub-second renewal", withTTL(base(f(10), 600, &Durations{Count: 20, P50: 2, P99: 3, Max: 3}), 1.5), 9, 6,
			"lock TTL 1s500ms is shorter than the longest run (3s): the lock lasts through a run only because jobwatch run renews it every 500ms; " +
				"if the wrapper is SIGKILLed or cannot renew it for 1s500ms (host stalled, Redis unreachable), the key expires while the job runs " +
				"and another host starts a second copy; 6s outlasts the longest run"},
		{"lock TTL under 1m30s renewed: the expiring alert stays quiet", withTTL(base(f(60), 600, &Durations{Count: 20, P50: 2, P99: 3, Max: 3}), 80), 9, 6, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Advise(tc.job)
			if got := strings.Join(a.Notes, "; "); a.RecommendTimeout != tc.timeout || a.RecommendLockTTL != tc.ttl || got != tc.note {
				t.Errorf("got timeout %v ttl %v notes\n%s\nwant timeout %v ttl %v notes\n%s", a.RecommendTimeout, a.RecommendLockTTL, got, tc.timeout, tc.ttl, tc.note)
			}
		})
	}
}

func TestWriteAdvice(t *testing.T) {
	jv, sv := fixture(t).View()
	var b bytes.Buffer
	if err := WriteAdvice(&b, Build(jv, sv, t0)); err != nil {
		t.Fatal(err)
	}
	golden(t, "advise.txt", b.Bytes())
}

// TestWriteAdviceLockTTL: the LOCK TTL column and its notes, one job per
// case: unknown, fine, renewed only, a thin margin, longer than the period.
func TestWriteAdviceLockTTL(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	many := &Durations{Count: 100, P50: 40, P99: 100, Max: 130}
	job := func(name string, ttl *float64) Job {
		return Job{Name: name, TimeoutSeconds: f(300), PeriodSeconds: 600, Durations: many, LockTTLSeconds: ttl}
	}
	rep := Report{Jobs: []Job{
		job("unknown", nil), job("fine", f(600)), job("renewed", f(60)), job("thin", f(180)), job("blocking", f(7200)),
	}}
	var b bytes.Buffer
	if err := WriteAdvice(&b, rep); err != nil {
		t.Fatal(err)
	}
	golden(t, "advise-lock-ttl.txt", b.Bytes())
}
