package exporter

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/jobwatch/jobwatch/config"
)

// Every type of source names what it reads exactly as jobwatch always has,
// so that positions saved before follow their sources: a change here makes
// every source read its records again after an upgrade.
func TestSourceIdentitiesAreStable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jobwatch.yml")
	yml := `jobs: [{name: a, every: 1h}]
sources:
  - name: runs
    type: runlog
    path: logs/runs.log
    format: json
  - name: db
    type: mysql
    dsn: "u:secret@tcp(db:3306)/app"
    table: app.job_runs
  - name: db-default
    type: mysql
    dsn_file: db.dsn
  - name: systemd
    type: journal
    units: {a.service: a}
  - name: dir
    type: journal
    directory: journal
    units: {a.service: a}
  - name: files
    type: journal
    files: [a.journal, /var/log/b.journal]
    units: {a.service: a}
`
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	hash := func(dsn, dsnFile string) string {
		h := sha256.Sum256([]byte(dsn + "\x00" + dsnFile))
		return hex.EncodeToString(h[:8])
	}
	want := map[string]string{
		"runs":       "runlog:" + filepath.Join(dir, "logs/runs.log"),
		"db":         "mysql:" + hash("u:secret@tcp(db:3306)/app", "") + ":app.job_runs",
		"db-default": "mysql:" + hash("", filepath.Join(dir, "db.dsn")) + ":",
		"systemd":    "journal::",
		"dir":        "journal:" + filepath.Join(dir, "journal") + ":",
		"files":      "journal::" + filepath.Join(dir, "a.journal") + ",/var/log/b.journal",
	}
	for _, s := range cfg.Sources {
		if got := s.Identity(); got != want[s.Name] {
			t.Errorf("source %s: identity %q, want %q", s.Name, got, want[s.Name])
		}
	}
}
