package jobname

import "testing"

// Valid and ValidBytes agree with the regular expression they stand for.
func FuzzValid(f *testing.F) {
	for _, s := range []string{"", "a", "_a", "stats", "backup.daily", "a:b-c", "1a", ".a", "-a", ":a", "a b", "a/b", "é", "A9_.:-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := RE.MatchString(s)
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
