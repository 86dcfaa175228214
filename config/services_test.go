package config

import (
	"strings"
	"testing"
	"time"
)

func TestCheckinsAndDiscovery(t *testing.T) {
	cfg, err := Parse(strings.NewReader(`
jobs:
  - name: backup
    every: 1d
  - name: ci
    every: 1h
checkins:
  enabled: true
  max_body: 64KiB
  jobs: [ci]
discovery:
  enabled: true
  interval: 10m
`))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Checkins.Enabled || cfg.Checkins.MaxBody != 64<<10 || strings.Join(cfg.Checkins.Accepted(cfg.Jobs), ",") != "ci" {
		t.Errorf("checkins %+v", cfg.Checkins)
	}
	if !cfg.Discovery.Enabled || cfg.Discovery.Root != "/" || cfg.Discovery.Interval.D().Minutes() != 10 || cfg.Discovery.RetiredRetention.D() != DefaultRetiredRetention {
		t.Errorf("discovery %+v", cfg.Discovery)
	}
	cfg, err = Parse(strings.NewReader("discovery: {enabled: true, watch: true, retired_retention: 30d}\n"))
	if err != nil || cfg.Discovery.RetiredRetention.D() != 30*24*time.Hour {
		t.Errorf("retired_retention: 30d: %v %+v", err, cfg)
	}

	cfg, err = Parse(strings.NewReader("jobs:\n  - name: a\n    every: 1h\ncheckins: {enabled: true, max_body: 2048}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Checkins.MaxBody != 2048 || strings.Join(cfg.Checkins.Accepted(cfg.Jobs), ",") != "a" || cfg.Discovery.Enabled {
		t.Errorf("defaults: %+v %+v", cfg.Checkins, cfg.Discovery)
	}

	_, err = Parse(strings.NewReader(`
jobs:
  - name: a
    every: 1h
checkins:
  enabled: true
  max_body: 1GiB
  jobs: [nosuch]
  colour: blue
discovery:
  interval: 1s
  retired_retention: -1h
`))
	for _, want := range []string{
		`checkins: line 9: unknown field "colour"`,
		`discovery: interval must be at least 10s, got 1s`,
		`discovery: retired_retention must be positive, like 7d, got -1h`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
	_, err = Parse(strings.NewReader("jobs:\n  - name: a\n    every: 1h\ncheckins:\n  max_body: 1GiB\n  jobs: [nosuch]\n"))
	for _, want := range []string{"checkins: max_body must be between 0 and 10485760 bytes", `checkins: jobs: "nosuch" is not a configured job`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
	_, err = Parse(strings.NewReader("jobs:\n  - name: a\n    every: 1h\ncheckins:\n  max_body: lots\n"))
	if err == nil || !strings.Contains(err.Error(), `bad size "lots"`) {
		t.Errorf("bad size: %v", err)
	}
}

// store: mysql needs one DSN and a plain table; spool, the default, takes
// neither.
func TestCheckinsStore(t *testing.T) {
	const jobs = "jobs:\n  - name: a\n    every: 1h\n"
	cfg, err := Parse(strings.NewReader(jobs + "checkins: {enabled: true}\n"))
	if err != nil || cfg.Checkins.Store != StoreSpool {
		t.Fatalf("default store %q, %v", cfg.Checkins.Store, err)
	}
	const reader = "sources:\n  - {name: shared, type: mysql, dsn: x}\n"
	cfg, err = Parse(strings.NewReader(jobs + reader + "checkins: {enabled: true, store: mysql, mysql_dsn_file: dsn}\n"))
	if err != nil || cfg.Checkins.Store != StoreMySQL || cfg.Checkins.Table != DefaultCheckTable || cfg.Checkins.MySQLDSNFile != cfg.Path("dsn") {
		t.Fatalf("store: mysql: %+v, %v", cfg.Checkins, err)
	}
	for _, tc := range []struct{ name, block, want string }{
		{"unknown store", "{store: redis}", `checkins: store must be spool or mysql, got "redis"`},
		{"no dsn", "{store: mysql}", "checkins: store: mysql needs exactly one of mysql_dsn and mysql_dsn_file"},
		{"two dsns", "{store: mysql, mysql_dsn: a, mysql_dsn_file: b}", "exactly one of mysql_dsn and mysql_dsn_file"},
		{"dsn for the spool", "{mysql_dsn: a}", "checkins: mysql_dsn and mysql_dsn_file are for store: mysql"},
		{"bad table", "{store: mysql, mysql_dsn: a, table: 'x; DROP TABLE y'}", `checkins: table "x; DROP TABLE y": must be a plain identifier`},
		{"no mysql source", "{enabled: true, store: mysql, mysql_dsn: a}", "checkins: store: mysql needs a source of type: mysql reading table job_runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(jobs + "checkins: " + tc.block + "\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nlacks %q", err, tc.want)
			}
		})
	}
}

// Host mode (discovery.watch): jobs: may be empty, and only with it.
func TestDiscoveryWatch(t *testing.T) {
	cfg, err := Parse(strings.NewReader("discovery: {enabled: true, watch: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Discovery.Watch || len(cfg.Jobs) != 0 {
		t.Errorf("discovery %+v, %d jobs", cfg.Discovery, len(cfg.Jobs))
	}
	for _, tc := range []struct{ name, text, want string }{
		{"watch without enabled", "discovery: {watch: true}\n", "discovery: watch: true requires enabled: true"},
		{"enabled without watch", "discovery: {enabled: true}\n", "no jobs configured"},
		{"jobs empty without discovery", "jobs: []\n", "no jobs configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nlacks %q", err, tc.want)
			}
		})
	}
}
