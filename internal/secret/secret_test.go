package secret

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadMySQL(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	env := map[string]string{"PW": "s3cr:et@x"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	cfg, red, err := LoadMySQL(MySQL{DSN: "jobwatch:${PW}@tcp(db1:3306)/app", Getenv: getenv}, log)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Passwd != "s3cr:et@x" || cfg.Addr != "db1:3306" || !cfg.ParseTime || cfg.Timeout == 0 || cfg.ReadTimeout == 0 {
		t.Errorf("parsed %+v", cfg)
	}
	if got := red.String("connecting with s3cr:et@x failed"); strings.Contains(got, "s3cr") {
		t.Errorf("redacted %q", got)
	}
	if got := RedactedDSN(cfg); strings.Contains(got, "s3cr") || !strings.Contains(got, "xxxxx") {
		t.Errorf("Redacted = %q", got)
	}

	_, _, err = LoadMySQL(MySQL{DSN: "u:${NOPE}@tcp(h:1)/", DSNName: "mysql", Getenv: getenv}, log)
	if err == nil || err.Error() != "mysql: environment variable(s) not set: NOPE" {
		t.Errorf("missing variable: %v", err)
	}
	// A DSN that does not parse: its error names no secret.
	_, _, err = LoadMySQL(MySQL{DSN: "u:hunter2@tcp(h:1)/?x=%zz", Getenv: getenv}, log)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad DSN: %v", err)
	}

	file := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(file, []byte("u:filepw@unix(/run/mysqld.sock)/db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err = LoadMySQL(MySQL{File: file}, log)
	if err != nil || cfg.Passwd != "filepw" || cfg.Net != "unix" {
		t.Errorf("from file: %+v %v", cfg, err)
	}
	_, _, err = LoadMySQL(MySQL{File: file + ".missing", FileName: "mysql_dsn_file"}, log)
	if err == nil || !strings.HasPrefix(err.Error(), "mysql_dsn_file: ") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = LoadMySQL(MySQL{File: empty, FileName: "--lock-mysql-dsn-file"}, log)
	if err == nil || err.Error() != "--lock-mysql-dsn-file: "+empty+" is empty" {
		t.Errorf("empty file: %v", err)
	}
	_, _, err = LoadMySQL(MySQL{DSN: "u@/", File: file, DSNName: "mysql", FileName: "mysql_dsn_file"}, log)
	if err == nil || err.Error() != "mysql and mysql_dsn_file: give one of them" {
		t.Errorf("both: %v", err)
	}
	// jobwatch run's: shorter timeouts, one redactor for every secret, no log.
	red = &Redactor{}
	red.Add("redis-pw")
	var red2 *Redactor
	cfg, red2, err = LoadMySQL(MySQL{DSN: "u:pw9@tcp(h:1)/", Timeout: 5 * time.Second, Redactor: red}, nil)
	if err != nil || red2 != red || cfg.Timeout != 5*time.Second || cfg.ReadTimeout != 5*time.Second {
		t.Fatalf("wrapper's: %+v %v", cfg, err)
	}
	if got := red.String("redis-pw u:pw9@tcp(h:1)/"); got != "xxxxx u:xxxxx@tcp(h:1)/" {
		t.Errorf("shared redactor: %q", got)
	}
}

// TestOnlyThePasswordRedacted: of a DSN only its password is a secret; the
// user, the address and the database stay readable in a message naming
// them, even when the password is short or occurs elsewhere in the DSN.
func TestOnlyThePasswordRedacted(t *testing.T) {
	const where = "u@tcp(127.0.0.1:3306)/tcp table `job_runs`: dial tcp 127.0.0.1:3306: connect: connection refused"
	for _, tc := range []struct{ name, dsn, shown string }{
		{"no password", "u@tcp(127.0.0.1:3306)/tcp", "u@tcp(127.0.0.1:3306)/tcp?parseTime=true"},
		{"one letter", "u:p@tcp(127.0.0.1:3306)/tcp", "u:xxxxx@tcp(127.0.0.1:3306)/tcp?parseTime=true"},
		{"a digit of the address", "u:1@tcp(127.0.0.1:3306)/tcp", "u:xxxxx@tcp(127.0.0.1:3306)/tcp?parseTime=true"},
		{"also the network and database", "u:tcp@tcp(127.0.0.1:3306)/tcp", "u:xxxxx@tcp(127.0.0.1:3306)/tcp?parseTime=true"},
		{"from the environment", "u:${PW}@tcp(${HOST})/tcp", "u:xxxxx@tcp(127.0.0.1:3306)/tcp?parseTime=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"PW": "u", "HOST": "127.0.0.1:3306"}
			getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			cfg, red, err := LoadMySQL(MySQL{DSN: tc.dsn, Getenv: getenv}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := red.String(where); got != where {
				t.Errorf("redacted\n%s\nwant it unchanged", got)
			}
			// The DSN itself, when it shows, shows without its password.
			if got := red.String(cfg.FormatDSN()); cfg.Passwd != "" && !strings.HasPrefix(got, "u:xxxxx@tcp(127.0.0.1:3306)/tcp?") {
				t.Errorf("DSN redacted to %q", got)
			}
			if got := RedactedDSN(cfg); !strings.HasPrefix(got, tc.shown) {
				t.Errorf("RedactedDSN %q, want %q...", got, tc.shown)
			}
		})
	}
}
