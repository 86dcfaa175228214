package wrapper

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// redactor hides secrets (passwords, values taken from the environment,
// whole DSNs and URLs) in every message the wrapper lets out: stderr and
// records never show them.
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

// redactedError prints without secrets and keeps err's chain for errors.Is
// and errors.As.
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
	return &redactedError{msg: r.string(err.Error()), err: err}
}

// envRefRE is a ${NAME} reference in a DSN, expanded as in jobwatch.yml:
// only the braced form, so a literal $ in a password needs no escaping.
var envRefRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// loadMySQLDSN reads a go-sql-driver DSN given as a flag value (with ${VAR}
// expanded) or as the content of a file (taken literally), parses it, and
// adds its secrets to red. flag names the flag for messages.
func loadMySQLDSN(flag, dsn, file string, getenv func(string) (string, bool), red *redactor) (*mysql.Config, error) {
	switch {
	case dsn != "" && file != "":
		return nil, fmt.Errorf("--%s and --%s-file: give one of them", flag, flag)
	case file != "":
		b, err := readSecretFile(file)
		if err != nil {
			return nil, fmt.Errorf("--%s-file: %w", flag, err)
		}
		dsn = b
	default:
		var missing []string
		dsn = envRefRE().ReplaceAllStringFunc(dsn, func(ref string) string {
			name := envRefRE().FindStringSubmatch(ref)[1]
			v, ok := getenv(name)
			if !ok {
				missing = append(missing, name)
			}
			red.add(v)
			return v
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("--%s: environment variable(s) not set: %s", flag, strings.Join(missing, ", "))
		}
	}
	// Until the DSN parses, its password is whatever lies between the first
	// ':' and the last '@'.
	if at := strings.LastIndex(dsn, "@"); at > 0 {
		if colon := strings.Index(dsn[:at], ":"); colon >= 0 {
			red.add(dsn[colon+1 : at])
		}
	}
	red.add(dsn)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, red.err(fmt.Errorf("--%s: %w", flag, err))
	}
	red.add(cfg.Passwd)
	if cfg.Timeout == 0 {
		cfg.Timeout = mysqlTimeout
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = mysqlTimeout
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = mysqlTimeout
	}
	cfg.Logger = &mysql.NopLogger{} // its messages ("unexpected EOF") would only be noise on the job's stderr
	return cfg, nil
}

// mysqlTimeout bounds dialling and each read and write of the wrapper's
// MySQL connections, unless the DSN sets timeout, readTimeout, writeTimeout.
const mysqlTimeout = 5 * time.Second

// readSecretFile reads a password or DSN file: one line, surrounding
// whitespace dropped.
func readSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", errors.New(path + " is empty")
	}
	return s, nil
}
