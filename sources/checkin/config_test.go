package checkin_test

import (
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/config"
	_ "github.com/jobwatch/jobwatch/sources/all"
	"github.com/jobwatch/jobwatch/sources/checkin"
)

func TestConfigBlock(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`
jobs:
  - name: backup
    every: 1d
  - name: ci
    every: 1h
checkins:
  enabled: true
  max_body: 64KiB
  jobs: [ci]
`))
	if err != nil {
		t.Fatal(err)
	}
	c := checkin.ConfigOf(cfg)
	if !c.Enabled || c.MaxBody != 64<<10 || strings.Join(c.Accepted(cfg.Jobs), ",") != "ci" {
		t.Errorf("checkins %+v", c)
	}

	cfg, err = config.Parse(strings.NewReader("jobs:\n  - name: a\n    every: 1h\ncheckins: {enabled: true, max_body: 2048}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := checkin.ConfigOf(cfg); c.MaxBody != 2048 || strings.Join(c.Accepted(cfg.Jobs), ",") != "a" {
		t.Errorf("defaults: %+v", c)
	}
	cfg, err = config.Parse(strings.NewReader("jobs:\n  - name: a\n    every: 1h\n"))
	if c := checkin.ConfigOf(cfg); err != nil || c.Enabled || c.MaxBody != checkin.DefaultMaxBody || c.Store != checkin.StoreSpool {
		t.Errorf("no block: %v %+v", err, c)
	}

	_, err = config.Parse(strings.NewReader(`
jobs:
  - name: a
    every: 1h
checkins:
  enabled: true
  max_body: 1GiB
  jobs: [nosuch]
  colour: blue
`))
	if want := `checkins: line 9: unknown field "colour"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v\nlacks %q", err, want)
	}
	_, err = config.Parse(strings.NewReader("jobs:\n  - name: a\n    every: 1h\ncheckins:\n  max_body: 1GiB\n  jobs: [nosuch]\n"))
	for _, want := range []string{"checkins: max_body must be between 0 and 10485760 bytes", `checkins: jobs: "nosuch" is not a configured job`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
	_, err = config.Parse(strings.NewReader("jobs:\n  - name: a\n    every: 1h\ncheckins:\n  max_body: lots\n"))
	if err == nil || !strings.Contains(err.Error(), `bad size "lots"`) {
		t.Errorf("bad size: %v", err)
	}
}

// store: mysql needs one DSN and a plain table; spool, the default, takes
// neither.
func TestConfigStore(t *testing.T) {
	const jobs = "jobs:\n  - name: a\n    every: 1h\n"
	cfg, err := config.Parse(strings.NewReader(jobs + "checkins: {enabled: true}\n"))
	if err != nil || checkin.ConfigOf(cfg).Store != checkin.StoreSpool {
		t.Fatalf("default store %+v, %v", checkin.ConfigOf(cfg), err)
	}
	const reader = "sources:\n  - {name: shared, type: mysql, dsn: x}\n"
	cfg, err = config.ParseAt([]byte(jobs+reader+"checkins: {enabled: true, store: mysql, mysql_dsn_file: dsn}\n"), "/etc/jobwatch/jobwatch.yml")
	if c := checkin.ConfigOf(cfg); err != nil || c.Store != checkin.StoreMySQL || c.Table != checkin.DefaultCheckTable || c.MySQLDSNFile != "/etc/jobwatch/dsn" {
		t.Fatalf("store: mysql: %+v, %v", c, err)
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
			_, err := config.Parse(strings.NewReader(jobs + "checkins: " + tc.block + "\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nlacks %q", err, tc.want)
			}
		})
	}
}

// keys, root_paths and create: each key a string or a list, never shown
// in a message; create needs match and one schedule.
func TestConfigKeysAndCreate(t *testing.T) {
	const jobs = "jobs:\n  - {name: a, every: 1h, aliases: [5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278]}\n"
	cfg, err := config.Parse(strings.NewReader(jobs + `checkins:
  enabled: true
  root_paths: true
  keys: {healthchecks: [fqOOd6-F4MMNuCEnzTU01w, second-key-1234], sentry: 0123456789abcdef0123456789abcdef}
  create: {match: ^tmp-, schedule: "0 * * * *", grace: 5m}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := checkin.ConfigOf(cfg)
	if !c.RootPaths || len(c.Keys.Healthchecks) != 2 || len(c.Keys.Sentry) != 1 || c.Create.Max != checkin.DefaultCreateMax {
		t.Errorf("%+v", c)
	}
	for _, tc := range []struct{ name, block, want string }{
		{"short key", "{keys: {cronitor: abc}}", "checkins: keys.cronitor[0] must match"},
		{"key a job's alias", "{keys: {healthchecks: [good-key-123, 5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278]}}", "checkins: keys.healthchecks[1] is also a job's name or alias"},
		{"create without match", "{create: {every: 1h}}", "checkins: create: needs match"},
		{"create without schedule", "{create: {match: x}}", "checkins: create needs exactly one of every and schedule"},
		{"create bad match", "{create: {match: '(', every: 1h}}", "checkins: create.match: error parsing regexp"},
		{"create bad schedule", "{create: {match: x, schedule: '99 * * * *'}}", "checkins: create: "},
		{"create max", "{create: {match: x, every: 1h, max: 5000}}", "checkins: create.max must be between 1 and 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse(strings.NewReader(jobs + "checkins: " + tc.block + "\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nlacks %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "5bf66975") && tc.name == "key a job's alias" {
				t.Errorf("a key is shown: %v", err)
			}
		})
	}
}
