package discover

import (
	"bytes"
	"strings"
	"testing"
)

// Host mode's config: the example host's six jobs join a config without
// jobs; a configured job of the same name stays as configured, and a
// configured journal source reading the system journal takes the units and
// cron matches instead of a second source reading it.
func TestHostConfig(t *testing.T) {
	h, err := Read("testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	out, err := HostConfig(h, []byte("discovery: {enabled: true, watch: true}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseConfig(t, out)
	if len(cfg.Jobs) != len(h.Jobs) || len(cfg.Sources) != 2 {
		t.Errorf("%d jobs and %d sources, want %d and 2 (journal, runs):\n%s", len(cfg.Jobs), len(cfg.Sources), len(h.Jobs), out)
	}
	again, err := HostConfig(h, []byte("discovery: {enabled: true, watch: true}\n"), "")
	if err != nil || !bytes.Equal(again, out) {
		t.Errorf("the same host and config give other bytes (%v):\n%s", err, again)
	}

	mine := `discovery: {enabled: true, watch: true}
jobs:
  - name: backup
    every: 1d
  - name: rotate
    every: 1d
sources:
  - name: system
    type: journal
    units:
      rotate.service: rotate
`
	out, err = HostConfig(h, []byte(mine), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg = parseConfig(t, out)
	if len(cfg.Jobs) != len(h.Jobs)+1 || cfg.Jobs[0].Name != "backup" || cfg.Jobs[0].Every.D().Hours() != 24 {
		t.Errorf("jobs %+v", cfg.Jobs)
	}
	var srcs []string
	for _, s := range cfg.Sources {
		srcs = append(srcs, s.Name+":"+s.Type)
	}
	if got := strings.Join(srcs, " "); got != "system:journal runs:runlog" {
		t.Errorf("sources = %s, want the configured journal source and the run log:\n%s", got, out)
	}
	for _, want := range []string{`"metrics-push.service": "metrics-push"`, `"rotate.service": "rotate"`, `"job": "db-dump-postgres"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the journal source lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), `"job": "backup"`) {
		t.Errorf("the configured backup job is matched in the journal as the discovered one:\n%s", out)
	}
}
