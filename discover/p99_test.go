package discover

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

func TestP99(t *testing.T) {
	hist := func(durations ...float64) model.Histogram {
		var h model.Histogram
		for _, d := range durations {
			h.Observe(d)
		}
		return h
	}
	many := func(n int, d float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	tests := []struct {
		name string
		h    model.Histogram
		want time.Duration
		ok   bool
	}{
		{name: "none", h: model.Histogram{}, ok: false},
		{name: "one run", h: hist(20), want: 30 * time.Second, ok: true},
		{name: "one outlier in 201 is not the P99", h: hist(append(many(200, 1500), 3*86400)...), want: 30 * time.Minute, ok: true},
		{name: "two outliers in 101 are", h: hist(append(many(99, 1500), 4000, 4000)...), want: 2 * time.Hour, ok: true},
		{name: "above every bound", h: hist(2 * 86400), want: 24 * time.Hour, ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := P99(tc.h)
			if got != tc.want || ok != tc.ok {
				t.Errorf("P99 = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestNoLockWithDurations: a cron job without a lock whose P99 run is
// longer than its period is said to overlap; one with a lock is not.
func TestNoLockWithDurations(t *testing.T) {
	h, err := Read(filepath.Join("testdata", "debian"))
	if err != nil {
		t.Fatal(err)
	}
	p99 := map[string]time.Duration{
		"cron.hourly": 2 * time.Hour,
		"cron.daily":  time.Hour, // shorter than its day
		"backup":      5 * time.Hour,
	}
	msgs := map[string]string{}
	for _, f := range Check(h, Options{Now: now, P99: p99}) {
		if f.Kind == KindNoLock {
			msgs[f.Job] = f.Message
		}
	}
	if m := msgs["cron.hourly"]; !strings.Contains(m, "no lock, and its runs take up to 2h (P99 of the runs jobwatch saw) while it is scheduled every 1h: runs overlap") {
		t.Errorf("cron.hourly: %q", m)
	}
	if m := msgs["cron.daily"]; m != "no lock: a run that outlasts the period overlaps the next one" {
		t.Errorf("cron.daily: %q", m)
	}
	if m, ok := msgs["backup"]; ok {
		t.Errorf("backup has a lock: %q", m)
	}
}
