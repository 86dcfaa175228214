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
	many := &Durations{Count: 100, P50: 40, P99: 100, Max: 130}
	for _, tc := range []struct {
		name         string
		job          Job
		timeout, ttl float64
		note         string
	}{
		{"too few", base(nil, 600, &Durations{Count: 19, P50: 1, P99: 2, Max: 3}), 0, 0, "too few finished runs with a duration (19 of 20)"},
		{"none yet", base(nil, 600, nil), 0, 0, "too few finished runs with a duration (0 of 20)"},
		{"no timeout", base(nil, 600, many), 300, 300, "no timeout: a hung run holds its lock forever; set timeout: 5m"},
		{"tight", base(f(120), 600, many), 300, 300, "timeout 2m is below 1.5 × P99 (1m40s): healthy slow runs get killed; raise it to 5m"},
		{"ok", base(f(300), 600, many), 300, 300, "ok"},
		{"outlasts period", base(f(300), 60, many), 300, 300, "P99 1m40s outlasts the period 1m: without a lock, runs overlap"},
		{"hours", base(f(9000), 86400, &Durations{Count: 30, P50: 3000, P99: 4000, Max: 5000}), 14400, 10800, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Advise(tc.job)
			if a.RecommendTimeout != tc.timeout || a.RecommendLockTTL != tc.ttl || !strings.HasPrefix(strings.Join(a.Notes, "; "), tc.note) {
				t.Errorf("got timeout %v ttl %v notes %q", a.RecommendTimeout, a.RecommendLockTTL, a.Notes)
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
