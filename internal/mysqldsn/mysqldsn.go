// Package mysqldsn reads a go-sql-driver DSN as jobwatch's config and flags
// give it: inline with ${VAR} references to the environment, or from a file;
// and keeps its secrets out of every message that leaves jobwatch.
package mysqldsn

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// envRefRE is a ${NAME} reference in a dsn. Only the braced form is expanded,
// so that a literal $ in a password needs no escaping.
var envRefRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// Redactor hides secrets (the password, the values taken from the
// environment) in messages.
type Redactor struct{ secrets []string }

func (r *Redactor) add(s string) {
	if s != "" {
		r.secrets = append(r.secrets, s)
	}
}

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "xxxxx")
	}
	return s
}

// redactedError keeps the chain of err (errors.Is and As still work) but
// prints without secrets.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Err returns err printing without secrets.
func (r *Redactor) Err(err error) error {
	if err == nil {
		return nil
	}
	var re *redactedError
	if errors.As(err, &re) && re == err {
		return err
	}
	return &redactedError{msg: r.String(err.Error()), err: err}
}

// Source says where a DSN comes from: DSN inline (with ${VAR} expanded by
// Getenv) or the content of File. Names are the config keys or flags, for
// messages.
type Source struct {
	DSN, File         string
	DSNName, FileName string
	Getenv            func(string) (string, bool)
}

// Load reads, expands and parses a DSN and sets what jobwatch relies on:
// times parsed, connect, read and write timeouts, and the driver's own log
// lines routed to log at debug level. The returned errors are already
// redacted, and so is everything the Redactor is given.
func Load(s Source, log *slog.Logger) (*mysql.Config, *Redactor, error) {
	red := &Redactor{}
	if s.Getenv == nil {
		s.Getenv = os.LookupEnv
	}
	if s.DSNName == "" {
		s.DSNName = "dsn"
	}
	if s.FileName == "" {
		s.FileName = "dsn_file"
	}
	var dsn string
	switch {
	case s.File != "":
		b, err := os.ReadFile(s.File)
		if err != nil {
			return nil, red, fmt.Errorf("%s: %w", s.FileName, err)
		}
		if fi, err := os.Stat(s.File); err == nil && fi.Mode().Perm()&0o077 != 0 {
			log.Warn(s.FileName+" is readable by others than its owner", "path", s.File, "mode", fi.Mode().Perm().String())
		}
		dsn = strings.TrimSpace(string(b))
	default:
		var missing []string
		dsn = envRefRE().ReplaceAllStringFunc(s.DSN, func(ref string) string {
			name := envRefRE().FindStringSubmatch(ref)[1]
			v, ok := s.Getenv(name)
			if !ok {
				missing = append(missing, name)
			}
			red.add(v)
			return v
		})
		if len(missing) > 0 {
			return nil, red, fmt.Errorf("%s: environment variable(s) not set: %s", s.DSNName, strings.Join(missing, ", "))
		}
	}
	// Until the DSN parses, its password is whatever lies between the
	// first ':' and the last '@' before the address.
	if at := strings.LastIndex(dsn, "@"); at > 0 {
		if colon := strings.Index(dsn[:at], ":"); colon >= 0 {
			red.add(dsn[colon+1 : at])
		}
	}
	red.add(dsn)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, red, red.Err(fmt.Errorf("%s: %w", s.DSNName, err))
	}
	red.add(cfg.Passwd)
	// Times are read as time.Time, in the zone of the DSN's loc (UTC unless
	// it says otherwise).
	cfg.ParseTime = true
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second // a cut network does not hang a query forever
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	cfg.Logger = &driverLogger{log: log, red: red}
	return cfg, red, nil
}

// Redacted is the DSN as it may be shown.
func Redacted(cfg *mysql.Config) string {
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
