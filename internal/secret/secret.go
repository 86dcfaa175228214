// Package secret reads what jobwatch's config and flags give as secrets (a
// go-sql-driver DSN inline with ${VAR} references to the environment or
// from a file, a password file) and keeps them out of every message that
// leaves jobwatch: logs, errors, records, pages. Of a DSN only the password
// is a secret.
package secret

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/jobwatch/jobwatch/internal/redact"
)

// envRefRE is a ${NAME} reference in a dsn. Only the braced form is expanded,
// so that a literal $ in a password needs no escaping.
var envRefRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// Redactor hides secrets in messages (package redact, which jobwatch run's
// start-up path imports without this package's MySQL driver).
type Redactor = redact.Redactor

// MySQL says where a DSN comes from: DSN inline (with ${VAR} expanded by
// Getenv) or the content of File. Names are the config keys or flags, for
// messages.
type MySQL struct {
	DSN, File         string
	DSNName, FileName string
	Getenv            func(string) (string, bool)
	// Timeout, when set, bounds dialling and every read and write unless
	// the DSN sets its own (jobwatch run's short-lived connections); else
	// 10 s to dial and 30 s a read or write.
	Timeout time.Duration
	// Redactor collects the DSN's secrets; nil: a new one.
	Redactor *Redactor
}

// LoadMySQL reads, expands and parses a DSN and sets what jobwatch relies
// on: times parsed, connect, read and write timeouts, and the driver's own
// log lines routed to log at debug level (dropped when log is nil). The
// returned errors are already redacted, and the Redactor is given the DSN's
// password, the one part of it that is a secret: the user, the server's
// address and the database are what a message must name.
func LoadMySQL(s MySQL, log *slog.Logger) (*mysql.Config, *Redactor, error) {
	red := s.Redactor
	if red == nil {
		red = &Redactor{}
	}
	s = s.withDefaults()
	dsn, env, err := s.read(log)
	if err != nil {
		return nil, red, err
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, red, unparsed(dsn, env).Err(fmt.Errorf("%s: %w", s.DSNName, err))
	}
	red.AddPassword(cfg.Passwd)
	s.configure(cfg, red, log)
	return cfg, red, nil
}

func (s MySQL) withDefaults() MySQL {
	if s.Getenv == nil {
		s.Getenv = os.LookupEnv
	}
	if s.DSNName == "" {
		s.DSNName = "dsn"
	}
	if s.FileName == "" {
		s.FileName = "dsn_file"
	}
	return s
}

// read is the DSN's text: File's content, or DSN with its references to
// the environment expanded, and the values the environment gave.
func (s MySQL) read(log *slog.Logger) (dsn string, env []string, err error) {
	switch {
	case s.DSN != "" && s.File != "":
		return "", nil, fmt.Errorf("%s and %s: give one of them", s.DSNName, s.FileName)
	case s.File != "":
		b, err := ReadFile(s.File, log)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", s.FileName, err)
		}
		return b, nil, nil
	}
	var missing []string
	dsn = envRefRE().ReplaceAllStringFunc(s.DSN, func(ref string) string {
		name := envRefRE().FindStringSubmatch(ref)[1]
		v, ok := s.Getenv(name)
		if !ok {
			missing = append(missing, name)
		}
		env = append(env, v)
		return v
	})
	if len(missing) > 0 {
		return "", nil, fmt.Errorf("%s: environment variable(s) not set: %s", s.DSNName, strings.Join(missing, ", "))
	}
	return dsn, env, nil
}

// unparsed redacts the error of a DSN that did not parse, whose password is
// then unknown: the whole DSN, the values the environment gave it and what
// may be its password (between the first ':' and the last '@') are hidden
// from that one message.
func unparsed(dsn string, env []string) *Redactor {
	red := &Redactor{}
	if at := strings.LastIndex(dsn, "@"); at > 0 {
		if colon := strings.Index(dsn[:at], ":"); colon >= 0 {
			red.Add(dsn[colon+1 : at])
		}
	}
	red.Add(dsn)
	for _, v := range env {
		red.Add(v)
	}
	return red
}

// configure sets on cfg what jobwatch relies on: times parsed, timeouts
// (the DSN's own, else s.Timeout's, else the defaults) and the driver's log.
func (s MySQL) configure(cfg *mysql.Config, red *Redactor, log *slog.Logger) {
	// Times are read as time.Time, in the zone of the DSN's loc (UTC unless
	// it says otherwise).
	cfg.ParseTime = true
	dial, rw := 10*time.Second, 30*time.Second // a cut network does not hang a query forever
	if s.Timeout > 0 {
		dial, rw = s.Timeout, s.Timeout
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = dial
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = rw
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = rw
	}
	if log == nil {
		cfg.Logger = &mysql.NopLogger{}
	} else {
		cfg.Logger = &driverLogger{log: log, red: red}
	}
}

// ReadFile reads a password or DSN file: one line, surrounding whitespace
// dropped; empty is an error. A file others may read is worth a warning
// (on log, when not nil): it holds a secret.
func ReadFile(path string, log *slog.Logger) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// The mode of the file read, not of whatever is at path a moment later.
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 && log != nil {
		log.Warn("a secret's file is readable by others than its owner", "path", path, "mode", fi.Mode().Perm().String())
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", errors.New(path + " is empty")
	}
	return s, nil
}

// RedactedDSN is the DSN as it may be shown.
func RedactedDSN(cfg *mysql.Config) string {
	c := cfg.Clone()
	if c.Passwd != "" {
		c.Passwd = "xxxxx"
	}
	return c.FormatDSN()
}

// driverLogger routes go-sql-driver's own messages ("closing bad idle
// connection") to a logger at debug level, redacted.
type driverLogger struct {
	log *slog.Logger
	red *Redactor
}

func (d *driverLogger) Print(v ...any) {
	d.log.Debug("mysql driver", "msg", d.red.String(strings.TrimSpace(fmt.Sprint(v...))))
}
