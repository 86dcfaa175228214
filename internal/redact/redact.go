// Package redact hides secrets (passwords, values taken from the
// environment, whole DSNs and URLs) in messages. It imports nothing but the
// standard library's basics: jobwatch run's start-up path uses it.
package redact

import (
	"errors"
	"strings"
)

// Redactor hides secrets in messages. The zero value is ready; one Redactor
// may collect the secrets of several DSNs and URLs (jobwatch run's).
type Redactor struct{ secrets []string }

// Add makes s a secret.
func (r *Redactor) Add(s string) {
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
