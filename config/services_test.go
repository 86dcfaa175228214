package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDiscovery(t *testing.T) {
	cfg, err := Parse(strings.NewReader(`
jobs:
  - name: backup
    every: 1d
discovery:
  enabled: true
  interval: 10m
`))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Discovery.Enabled || cfg.Discovery.Root != "/" || cfg.Discovery.Interval.D().Minutes() != 10 || cfg.Discovery.RetiredRetention.D() != DefaultRetiredRetention {
		t.Errorf("discovery %+v", cfg.Discovery)
	}
	cfg, err = Parse(strings.NewReader("discovery: {enabled: true, watch: true, retired_retention: 30d}\n"))
	if err != nil || cfg.Discovery.RetiredRetention.D() != 30*24*time.Hour {
		t.Errorf("retired_retention: 30d: %v %+v", err, cfg)
	}
	cfg, err = Parse(strings.NewReader("jobs:\n  - name: a\n    every: 1h\n"))
	if err != nil || cfg.Discovery.Enabled {
		t.Errorf("defaults: %v %+v", err, cfg.Discovery)
	}
	_, err = Parse(strings.NewReader(`
jobs:
  - name: a
    every: 1h
discovery:
  interval: 1s
  retired_retention: -1h
`))
	for _, want := range []string{
		`discovery: interval must be at least 10s, got 1s`,
		`discovery: retired_retention must be positive, like 7d, got -1h`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
}

// A top-level block a service registers is handed to its decoder, absent
// too (for its defaults); its problems are prefixed with its key; without
// the registration the key is unknown.
func TestServiceBlocks(t *testing.T) {
	const jobs = "jobs:\n  - name: a\n    every: 1h\n"
	if _, err := Parse(strings.NewReader(jobs + "widgets: {on: true}\n")); err == nil || !strings.Contains(err.Error(), `unknown field "widgets"`) {
		t.Fatalf("unregistered block: %v", err)
	}
	type widgets struct {
		On   bool `yaml:"on"`
		Jobs int
	}
	RegisterServiceBlock("widgets", func(b ServiceBlock) (any, []error) {
		w := &widgets{Jobs: len(b.Config.Jobs)}
		if b.Node == nil {
			return w, nil
		}
		errs := Decode(b.Node, w, "")
		if !w.On {
			errs = append(errs, errors.New("on must be true"))
		}
		return w, errs
	})
	defer func() { blocksMu.Lock(); delete(blocks, "widgets"); blocksMu.Unlock() }()
	cfg, err := Parse(strings.NewReader(jobs + "widgets: {on: true}\n"))
	if err != nil || *cfg.Service("widgets").(*widgets) != (widgets{On: true, Jobs: 1}) {
		t.Fatalf("widgets: %v %+v", err, cfg.Service("widgets"))
	}
	cfg, err = Parse(strings.NewReader(jobs))
	if err != nil || *cfg.Service("widgets").(*widgets) != (widgets{Jobs: 1}) {
		t.Fatalf("no widgets block: %v %+v", err, cfg.Service("widgets"))
	}
	_, err = Parse(strings.NewReader(jobs + "widgets: {on: false, colour: blue}\n"))
	for _, want := range []string{`widgets: line 4: unknown field "colour"`, "widgets: on must be true"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
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

// Aliases are slugs (lowercase UUIDs included), each naming one job; a
// clash names both jobs.
func TestAliases(t *testing.T) {
	const ok = `
jobs:
  - name: backup
    every: 1d
    aliases: [5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278, db-backup]
  - name: report
    every: 1h
    aliases: [nightly_report]
`
	cfg, err := Parse(strings.NewReader(ok))
	if err != nil || strings.Join(cfg.Jobs[0].Aliases, ",") != "5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278,db-backup" {
		t.Fatalf("%v %+v", err, cfg)
	}
	for _, tc := range []struct{ name, jobs, want string }{
		{"clash", "  - {name: a, every: 1h, aliases: [x]}\n  - {name: b, every: 1h, aliases: [x]}\n",
			`job "b": alias "x" is also job "a"'s (line 2): an alias names one job`},
		{"another job's name", "  - {name: a, every: 1h}\n  - {name: b, every: 1h, aliases: [a]}\n",
			`job "b": alias "a" is also job "a"'s (line 2)`},
		{"twice", "  - {name: a, every: 1h, aliases: [x, x]}\n", `job "a": alias "x" is the job's name or given twice`},
		{"upper case", "  - {name: a, every: 1h, aliases: [5BF66975-D4C7-4BF5-BCC8-B8D8A82EA278]}\n", `alias "5BF66975-D4C7-4BF5-BCC8-B8D8A82EA278" must match`},
		{"slash", "  - {name: a, every: 1h, aliases: [a/b]}\n", `alias "a/b" must match`},
		{"too long", "  - {name: a, every: 1h, aliases: [" + strings.Repeat("x", 129) + "]}\n", "at most 128 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader("jobs:\n" + tc.jobs))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nlacks %q", err, tc.want)
			}
		})
	}
}
