// Package redact hides secrets (passwords, values taken from the
// environment, Redis URLs) in messages. It imports nothing but the
// standard library's basics: jobwatch run's start-up path uses it.
package redact

import (
	"errors"
	"strings"
)

// Redactor hides secrets in messages. The zero value is ready; one Redactor
// may collect the secrets of several DSNs and URLs (jobwatch run's).
type Redactor struct {
	secrets   []string // hidden wherever they occur
	passwords []string // hidden where they stand as a password
}

// minBarePassword is the length from which a password is hidden wherever it
// occurs. A shorter one ("p", "tcp", "3306") is as likely a piece of the
// message itself (the network, the address, the database), and is hidden
// only where it stands as a DSN's or URL's password: user:PASSWORD@.
const minBarePassword = 8

// mask replaces a secret.
const mask = "xxxxx"

// Add makes s a secret, hidden wherever it occurs.
func (r *Redactor) Add(s string) {
	if s != "" {
		r.secrets = append(r.secrets, s)
	}
}

// AddPassword makes pw a secret as a password (a DSN's Passwd): hidden where
// it stands as one, and everywhere once it is minBarePassword long, so that
// the user, the server's address and the database a message names stay
// readable.
func (r *Redactor) AddPassword(pw string) {
	switch {
	case pw == "":
	case len(pw) >= minBarePassword:
		r.Add(pw)
	default:
		r.passwords = append(r.passwords, pw)
	}
}

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, mask)
	}
	for _, pw := range r.passwords {
		s = strings.ReplaceAll(s, ":"+pw+"@", ":"+mask+"@")
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
