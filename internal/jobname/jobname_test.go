package jobname

import (
	"regexp"
	"testing"
)

// Valid and ValidBytes agree with the regular expression they stand for.
// re is Pattern as a regular expression, the reference Valid is fuzzed
// against (compiled here, not in the package: jobwatch run would pay for it
// at every start).
var re = regexp.MustCompile(Pattern)

func FuzzValid(f *testing.F) {
	for _, s := range []string{"", "a", "_a", "stats", "backup.daily", "a:b-c", "1a", ".a", "-a", ":a", "a b", "a/b", "é", "A9_.:-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := re.MatchString(s)
		if Valid(s) != want || ValidBytes([]byte(s)) != want {
			t.Fatalf("%q: Valid %v, ValidBytes %v, regexp %v", s, Valid(s), ValidBytes([]byte(s)), want)
		}
	})
}

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"stats", true}, {"_x", true}, {"Backup.daily:eu-1", true},
		{"", false}, {"1st", false}, {"-x", false}, {"a b", false}, {"a/b", false},
	} {
		if got := Valid(tc.name); got != tc.ok {
			t.Errorf("Valid(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
