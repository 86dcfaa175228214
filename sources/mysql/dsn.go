package mysql

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// envRefRE is a ${NAME} reference in a dsn. Only the braced form is expanded,
// so that a literal $ in a password needs no escaping.
var envRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// redactor hides secrets (the password, the values taken from the
// environment) in every message a source lets out.
type redactor struct{ secrets []string }

func (r *redactor) add(s string) {
	if s != "" {
		r.secrets = append(r.secrets, s)
	}
}

func (r *redactor) string(s string) string {
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

func (r *redactor) err(err error) error {
	if err == nil {
		return nil
	}
	var re *redactedError
	if errors.As(err, &re) && re == err {
		return err
	}
	return &redactedError{msg: r.string(err.Error()), err: err}
}

// loadDSN reads the source's DSN (dsn with ${VAR} expanded, or the content
// of dsn_file), parses it and sets what the source relies on. It also
// returns the redactor of its secrets; errors are already redacted.
func loadDSN(c *Config, getenv func(string) (string, bool), log *slog.Logger) (*mysql.Config, *redactor, error) {
	red := &redactor{}
	var dsn string
	switch {
	case c.DSNFile != "":
		b, err := os.ReadFile(c.DSNFile)
		if err != nil {
			return nil, red, fmt.Errorf("dsn_file: %w", err)
		}
		if fi, err := os.Stat(c.DSNFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
			log.Warn("dsn_file is readable by others than its owner", "path", c.DSNFile, "mode", fi.Mode().Perm().String())
		}
		dsn = strings.TrimSpace(string(b))
	default:
		var missing []string
		dsn = envRefRE.ReplaceAllStringFunc(c.DSN, func(ref string) string {
			name := envRefRE.FindStringSubmatch(ref)[1]
			v, ok := getenv(name)
			if !ok {
				missing = append(missing, name)
			}
			red.add(v)
			return v
		})
		if len(missing) > 0 {
			return nil, red, fmt.Errorf("dsn: environment variable(s) not set: %s", strings.Join(missing, ", "))
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
		return nil, red, red.err(fmt.Errorf("dsn: %w", err))
	}
	red.add(cfg.Passwd)
	// Times are read as time.Time, in the zone of the DSN's loc (UTC unless
	// it says otherwise).
	cfg.ParseTime = true
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second // a cut network does not hang a poll forever
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	cfg.Logger = &driverLogger{log: log, red: red}
	return cfg, red, nil
}

// redactedDSN is the DSN as it may be shown.
func redactedDSN(cfg *mysql.Config) string {
	c := cfg.Clone()
	if c.Passwd != "" {
		c.Passwd = "xxxxx"
	}
	return c.FormatDSN()
}

// driverLogger routes go-sql-driver's own messages ("closing bad idle
// connection") to the source's logger at debug level, redacted.
type driverLogger struct {
	log *slog.Logger
	red *redactor
}

func (d *driverLogger) Print(v ...any) {
	d.log.Debug("mysql driver", "msg", d.red.string(strings.TrimSpace(fmt.Sprint(v...))))
}
