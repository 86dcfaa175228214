package redact

import (
	"errors"
	"io/fs"
	"testing"
)

func TestRedactor(t *testing.T) {
	var r Redactor
	r.Add("redis://:hunter2@cache:6379")
	r.AddPassword("tcp")           // short: only where it is a password
	r.AddPassword("long-Pa55word") // long: wherever it occurs
	r.AddPassword("")              // none: nothing hidden
	for in, want := range map[string]string{
		"u:tcp@tcp(db1:3306)/app":                     "u:xxxxx@tcp(db1:3306)/app",
		"dial tcp db1:3306: connection refused":       "dial tcp db1:3306: connection refused",
		"u:long-Pa55word@tcp(db1)/ and long-Pa55word": "u:xxxxx@tcp(db1)/ and xxxxx",
		"cannot reach redis://:hunter2@cache:6379":    "cannot reach xxxxx",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	err := r.Err(&fs.PathError{Op: "open", Path: "u:tcp@x", Err: fs.ErrNotExist})
	if err.Error() != "open u:xxxxx@x: file does not exist" || !errors.Is(err, fs.ErrNotExist) || r.Err(err) != err {
		t.Errorf("Err: %v", err)
	}
}
