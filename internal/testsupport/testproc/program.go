package testproc

import (
	"os/exec"
	"testing"
)

// SkipShort skips the test under go test -short, which starts no outside
// program (a server, a browser, promtool, the journal tools, cron...), so
// that a contributor without them can run the unit tests. what names the
// program the test would start.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("starts %s: skipped in -short, which starts no outside program", what)
	}
}

// Program returns the path of name, an outside program the test starts,
// after SkipShort. In the full suite a missing program fails the test,
// naming the Debian package that has it: the suite must not pass by
// skipping what it did not run.
func Program(t testing.TB, name, debianPackage string) string {
	t.Helper()
	SkipShort(t, name)
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: install the Debian package %s (scripts/test.sh does)", name, debianPackage)
	}
	return p
}
