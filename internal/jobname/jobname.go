// Package jobname holds the one rule for job names, and for the source
// names that are label values too: config validates names with it, the
// wrapper checks --job with it, and the record parsers check every record's
// job with it.
package jobname

// Pattern is what a job_name (or source) label value may look like.
const Pattern = `^[a-zA-Z_][a-zA-Z0-9_.:-]*$`

// char marks the bytes allowed after the first.
var char = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "_.:-" {
		t[c] = true
	}
	return t
}()

// Valid reports whether name matches Pattern.
func Valid(name string) bool { return validBytes(name) }

// ValidBytes reports whether b matches Pattern, without allocating: the
// record parsers call it on every record.
func ValidBytes(b []byte) bool { return validBytes(b) }

func validBytes[S string | []byte](b S) bool {
	if len(b) == 0 {
		return false
	}
	if c := b[0]; c >= '0' && c <= '9' || c == '.' || c == ':' || c == '-' {
		return false
	}
	for i := 0; i < len(b); i++ {
		if !char[b[i]] {
			return false
		}
	}
	return true
}
