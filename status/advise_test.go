package status

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/model"
)

func TestAdvise(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	// base: a job whose every finished run succeeded, its durations d.
	base := func(timeout *float64, period float64, d *Durations) Job {
		j := Job{Name: "j", TimeoutSeconds: timeout, PeriodSeconds: period, Durations: d}
		if d != nil {
			j.Runs = map[string]uint64{"success": uint64(d.Count), "failure": 0, "timeout": 0, "lost": 0}
		}
		return j
	}
	// mixed: a job whose recent runs (newest first) are failed ones lasting
	// failed, then successful ones lasting ok; Durations mixes them all, as
	// the model's duration history does.
	mixed := func(timeout *float64, failed, ok []float64) Job {
		j := Job{Name: "j", TimeoutSeconds: timeout, PeriodSeconds: 600,
			Runs: map[string]uint64{"success": uint64(len(ok)), "failure": uint64(len(failed)), "timeout": 0, "lost": 0}}
		var all []float64
		for _, d := range failed {
			j.RecentRuns = append(j.RecentRuns, Run{Result: "failure", DurationSeconds: f(d)})
			all = append(all, d)
		}
		j.RecentRuns = append(j.RecentRuns, Run{Result: "skipped"})
		for _, d := range ok {
			j.RecentRuns = append(j.RecentRuns, Run{Result: "success", DurationSeconds: f(d)})
			all = append(all, d)
		}
		j.RecentRuns = append(j.RecentRuns, Run{Result: "lost"})
		if len(all) > 0 {
			p50, _ := model.DurationQuantile(all, 0.5)
			p99, _ := model.DurationQuantile(all, 0.99)
			maxD, _ := model.DurationQuantile(all, 1)
			j.Durations = &Durations{Count: len(all), P50: p50, P99: p99, Max: maxD}
		}
		return j
	}
	// spread: n durations from lo, step apart.
	spread := func(n int, lo, step float64) []float64 {
		var d []float64
		for i := range n {
			d = append(d, lo+float64(i)*step)
		}
		return d
	}
	withTTL := func(j Job, ttl float64) Job { j.LockTTLSeconds = &ttl; return j }
	withMin := func(j Job, min float64) Job { j.MinDurationSeconds = &min; return j }
	many := &Durations{Count: 100, P50: 40, P99: 100, Max: 130}
	for _, tc := range []struct {
		name         string
		job          Job
		timeout, ttl float64
		note         string
	}{
		{"too few", base(nil, 600, &Durations{Count: 19, P50: 1, P99: 2, Max: 3}), 0, 0, "too few successful runs with a duration (19 of 20) for timeout advice"},
		{"none yet", base(nil, 600, nil), 0, 0, "history too short: no finished run yet; the timeout is judged on successful runs only"},
		{"no timeout", base(nil, 600, many), 300, 0, "no timeout: a hung run holds its lock forever; set timeout: 5m"},
		{"tight", base(f(120), 600, many), 300, 0, "timeout 2m is below 1.5 × P99 (1m40s): healthy slow runs get killed; raise it to 5m"},
		{"ok", base(f(300), 600, many), 300, 0, "ok"},
		{"outlasts period", base(f(300), 60, many), 300, 0, "P99 1m40s outlasts the period 1m: without a lock, runs overlap"},
		{"hours", base(f(14400), 86400, &Durations{Count: 30, P50: 3000, P99: 4000, Max: 5000}), 14400, 0, "ok"},
		// ok only when the suggestion agrees with the configuration
		// (within 1.5 times either way).
		{"timeout twice the suggestion", base(f(8), 600, &Durations{Count: 30, P50: 1, P99: 1.2, Max: 1.5}), 4, 0,
			"timeout 8s differs from the suggested 4s (3 × P99 1s200ms): lower it to 4s"},
		{"timeout within 1.5 times the suggestion", base(f(6), 600, &Durations{Count: 30, P50: 1, P99: 1.2, Max: 1.5}), 4, 0, "ok"},
		{"timeout above 1.5 x P99, below the suggestion", base(f(9000), 86400, &Durations{Count: 30, P50: 3000, P99: 4000, Max: 5000}), 14400, 0,
			"timeout 2h30m differs from the suggested 4h (3 × P99 1h6m40s): raise it to 4h"},

		// The timeout from successful runs only: runs that failed at once
		// (5-47 ms) say nothing of how long a healthy run takes.
		{"failed runs only", mixed(nil, spread(30, 0.005, 0.0015), nil), 0, 0,
			"history too short: none of the last 31 finished runs succeeded with a duration; the timeout is judged on successful runs only"},
		{"failed runs mixed in", mixed(f(600), spread(10, 0.005, 0.005), spread(25, 60, 1)), 300, 0,
			"no min_duration: a run that does nothing passes for a success; the shortest of 25 successful runs took 1m: set min_duration: 6s"},
		{"failed runs mixed in, no timeout", mixed(nil, spread(10, 0.005, 0.005), spread(25, 60, 1)), 300, 0,
			"no timeout: a hung run holds its lock forever; set timeout: 5m; no min_duration: a run that does nothing passes for a success; the shortest of 25 successful runs took 1m: set min_duration: 6s"},
		{"min_duration set", withMin(mixed(f(300), spread(10, 0.005, 0.005), spread(25, 60, 1)), 5), 300, 0, "ok"},
		{"runs too short to tell", mixed(f(120), nil, spread(25, 2, 1)), 120, 0, "ok"},
		{"few successes among failures", mixed(f(600), spread(30, 0.005, 0.001), spread(5, 60, 1)), 0, 0,
			"too few successful runs with a duration (5 of 20) for timeout advice"},

		// The configured lease, from the run records; no lease, no lock
		// TTL advice (every case above).
		{"lock TTL too few runs", withTTL(base(f(300), 600, &Durations{Count: 3, P50: 100, P99: 200, Max: 200}), 10), 0, 0,
			"too few successful runs with a duration (3 of 20) for timeout advice; too few finished runs with a duration (3 of 20) for lock TTL advice"},
		{"lock TTL from failed runs too", withTTL(mixed(f(300), spread(30, 100, 2), nil), 60), 0, 360,
			"history too short: none of the last 31 finished runs succeeded with a duration; the timeout is judged on successful runs only; " +
				"lock TTL 1m is shorter than the longest run (2m38s): the lock lasts through a run only because jobwatch run renews it every 20s; " +
				"if it cannot renew it for 1m less its margin (Redis unreachable), it stops the job before the key expires, " +
				"and a host paused past it (a stalled VM) lets another host start a second copy; 6m outlasts the longest run"},
		{"lock TTL shorter than the longest run", withTTL(base(f(300), 600, many), 60), 300, 300,
			"lock TTL 1m is shorter than the longest run (2m10s): the lock lasts through a run only because jobwatch run renews it every 20s; " +
				"if it cannot renew it for 1m less its margin (Redis unreachable), it stops the job before the key expires, " +
				"and a host paused past it (a stalled VM) lets another host start a second copy; 5m outlasts the longest run"},
		{"lock TTL below 1.5 x the longest run", withTTL(base(f(300), 600, many), 180), 300, 300,
			"lock TTL 3m is below 1.5 × the longest run (2m10s): if jobwatch run cannot renew it (Redis unreachable), " +
				"a run a little longer than any so far is stopped before the key expires, or, on a host paused past it, overlaps a second copy on another host; 5m leaves room"},
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
				"if it cannot renew it for 1s500ms less its margin (Redis unreachable), it stops the job before the key expires, " +
				"and a host paused past it (a stalled VM) lets another host start a second copy; 6s outlasts the longest run"},
		{"lock TTL under 1m30s renewed: the expiring alert stays quiet", withTTL(base(f(9), 600, &Durations{Count: 20, P50: 2, P99: 3, Max: 3}), 80), 9, 6, "ok"},
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
		return Job{Name: name, TimeoutSeconds: f(300), PeriodSeconds: 600, Durations: many, LockTTLSeconds: ttl,
			Runs: map[string]uint64{"success": 100}}
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

// TestWriteAdviceResults: the timeout is advised from successful runs
// only. failing has only failed, in 5-47 ms: no suggestion (not "1s"), the
// history is too short; flaky's failures are left out of its figures, its
// 25 successes (1m-1m24s) give the suggestion; neither holds a Redis lease,
// so neither gets a lock TTL suggestion.
func TestWriteAdviceResults(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	job := func(name string, failed, ok []float64) Job {
		j := Job{Name: name, TimeoutSeconds: f(600), PeriodSeconds: 3600,
			Runs: map[string]uint64{"success": uint64(len(ok)), "failure": uint64(len(failed)), "timeout": 0, "lost": 0}}
		var all []float64
		for i := range max(len(failed), len(ok)) {
			if i < len(failed) {
				j.RecentRuns = append(j.RecentRuns, Run{Result: "failure", DurationSeconds: f(failed[i])})
				all = append(all, failed[i])
			}
			if i < len(ok) {
				j.RecentRuns = append(j.RecentRuns, Run{Result: "success", DurationSeconds: f(ok[i])})
				all = append(all, ok[i])
			}
		}
		p50, _ := model.DurationQuantile(all, 0.5)
		p99, _ := model.DurationQuantile(all, 0.99)
		maxD, _ := model.DurationQuantile(all, 1)
		j.Durations = &Durations{Count: len(all), P50: p50, P99: p99, Max: maxD}
		return j
	}
	spread := func(n int, lo, hi float64) []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = lo + (hi-lo)*float64(i)/float64(n-1)
		}
		return d
	}
	rep := Report{Jobs: []Job{
		job("failing", spread(30, 0.005, 0.047), nil),
		job("flaky", spread(10, 0.005, 0.047), spread(25, 60, 84)),
	}}
	var b bytes.Buffer
	if err := WriteAdvice(&b, rep); err != nil {
		t.Fatal(err)
	}
	golden(t, "advise-results.txt", b.Bytes())
}

// A retired job has nothing to advise: it is not in the table.
func TestAdviceLeavesOutRetired(t *testing.T) {
	jobs, srcs := everyState(t).View()
	var b strings.Builder
	if err := WriteAdvice(&b, Build(jobs, srcs, t0)); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "i-retired") || !strings.Contains(out, "a-ok") {
		t.Errorf("advice:\n%s\nwant every job but the retired one", out)
	}
}
