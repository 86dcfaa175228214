package mysqldsn

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	env := map[string]string{"PW": "s3cr:et@x"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	cfg, red, err := Load(Source{DSN: "jobwatch:${PW}@tcp(db1:3306)/app", Getenv: getenv}, log)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Passwd != "s3cr:et@x" || cfg.Addr != "db1:3306" || !cfg.ParseTime || cfg.Timeout == 0 || cfg.ReadTimeout == 0 {
		t.Errorf("parsed %+v", cfg)
	}
	if got := red.String("connecting with s3cr:et@x failed"); strings.Contains(got, "s3cr") {
		t.Errorf("redacted %q", got)
	}
	if got := Redacted(cfg); strings.Contains(got, "s3cr") || !strings.Contains(got, "xxxxx") {
		t.Errorf("Redacted = %q", got)
	}

	_, _, err = Load(Source{DSN: "u:${NOPE}@tcp(h:1)/", DSNName: "mysql", Getenv: getenv}, log)
	if err == nil || err.Error() != "mysql: environment variable(s) not set: NOPE" {
		t.Errorf("missing variable: %v", err)
	}
	// A DSN that does not parse: its error names no secret.
	_, _, err = Load(Source{DSN: "u:hunter2@tcp(h:1)/?x=%zz", Getenv: getenv}, log)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad DSN: %v", err)
	}

	file := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(file, []byte("u:filepw@unix(/run/mysqld.sock)/db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err = Load(Source{File: file}, log)
	if err != nil || cfg.Passwd != "filepw" || cfg.Net != "unix" {
		t.Errorf("from file: %+v %v", cfg, err)
	}
	_, _, err = Load(Source{File: file + ".missing", FileName: "mysql_dsn_file"}, log)
	if err == nil || !strings.HasPrefix(err.Error(), "mysql_dsn_file: ") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
