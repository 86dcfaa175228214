package config_test

import (
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	promodel "github.com/prometheus/common/model"

	_ "github.com/jobwatch/jobwatch/collector" // the label names of the metrics, which labels: may not take
	"github.com/jobwatch/jobwatch/config"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// A bad duration or an unknown key does not stop the reading: every problem
// of the file is reported, each with its line and its job or source.
func TestTypeErrorsAreCollected(t *testing.T) {
	for _, name := range []string{"collects-type-errors", "labels", "maintenance-errors"} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open("testdata/" + name + ".yml")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = config.Parse(f)
			if err == nil {
				t.Fatal("no error")
			}
			got := err.Error() + "\n"
			golden := "testdata/" + name + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// Durations are read in Go's syntax and in Prometheus'.
func TestDurations(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"500ms", 500 * time.Millisecond},
		{"1.5h", 90 * time.Minute},
		{"1d", 24 * time.Hour},
		{"1w", 7 * 24 * time.Hour},
		{"2d12h", 60 * time.Hour},
		{"1y", 365 * 24 * time.Hour},
		{"0", 0},
	} {
		t.Run(tc.in, func(t *testing.T) {
			cfg, err := config.Parse(strings.NewReader("jobs:\n  - name: a\n    every: " + tc.in + "\n    grace: 1m\n    timeout: " + tc.in + "\n  - name: b\n    every: 1h\n"))
			if tc.want == 0 {
				// every: 0 sets no schedule.
				if err == nil || !strings.Contains(err.Error(), "exactly one of every") {
					t.Fatalf("every: 0 accepted: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Jobs[0].Every.D(); got != tc.want {
				t.Errorf("every %s: %s, want %s", tc.in, got, tc.want)
			}
			if got := cfg.Jobs[0].Timeout.D(); got != tc.want {
				t.Errorf("timeout %s: %s, want %s", tc.in, got, tc.want)
			}
		})
	}
	for _, bad := range []string{"1x", "hourly", "1d1w", "1d1d", "d", "1 d", "-1d", "60"} {
		t.Run("bad "+bad, func(t *testing.T) {
			_, err := config.Parse(strings.NewReader("jobs:\n  - name: a\n    every: " + bad + "\n"))
			if err == nil || !strings.Contains(err.Error(), `job "a": line 3: bad duration "`+bad+`"`) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// ParseDuration accepts all that Prometheus' parser accepts, with the same
// value; it refuses nothing either accepts.
func FuzzParseDurationMatchesPrometheus(f *testing.F) {
	for _, s := range []string{"0", "1d", "1w", "1y", "2d12h", "1h30m", "90s", "500ms", "1.5h", "-5m", "1d1w", "1ms1s", "9999999999y", "", "1", "5us"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := config.ParseDuration(s)
		gd, gerr := time.ParseDuration(s)
		pd, perr := promodel.ParseDuration(s)
		switch {
		case gerr == nil:
			if err != nil || got != gd {
				t.Fatalf("%q: %v, %v; Go says %v", s, got, err, gd)
			}
		case perr == nil:
			if err != nil || got != time.Duration(pd) {
				t.Fatalf("%q: %v, %v; Prometheus says %v", s, got, err, time.Duration(pd))
			}
		default:
			if err == nil {
				t.Fatalf("%q: accepted as %v, refused by both", s, got)
			}
		}
	})
}

// min_duration is a duration below the job's timeout.
func TestMinDuration(t *testing.T) {
	parse := func(keys string) error {
		_, err := config.Parse(strings.NewReader("jobs:\n  - name: backup\n    every: 1d\n" + keys))
		return err
	}
	if err := parse("    min_duration: 30s\n    timeout: 1h\n"); err != nil {
		t.Errorf("valid: %v", err)
	}
	for keys, want := range map[string]string{
		"    min_duration: -1s\n":                  `job "backup": min_duration must not be negative`,
		"    min_duration: 1h\n    timeout: 30m\n": `job "backup": min_duration (1h) must be below timeout (30m)`,
		"    min_duration: soon\n":                 `bad duration "soon"`,
	} {
		if err := parse(keys); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %s", keys, err, want)
		}
	}
}
