package wrapper

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCleanHolder(t *testing.T) {
	cases := []struct{ in, want string }{
		{"web1:4242:0123456789abcdef", "web1:4242:0123456789abcdef"},
		{"a\nb\tc\x00", "a?b?c?"},
		{"bad\xffutf8", "bad?utf8"},
		{strings.Repeat("x", 300), strings.Repeat("x", maxHolder)},
		{strings.Repeat("x", maxHolder-1) + "é", strings.Repeat("x", maxHolder-1)},
		{"", ""},
	}
	for _, tc := range cases {
		if got := cleanHolder(tc.in); got != tc.want {
			t.Errorf("cleanHolder(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzCleanHolder(f *testing.F) {
	f.Add("web1:4242:0123456789abcdef")
	f.Add("a\nb\xff" + strings.Repeat("é", 200))
	f.Fuzz(func(t *testing.T, s string) {
		got := cleanHolder(s)
		if len(got) > maxHolder || !utf8.ValidString(got) || strings.IndexFunc(got, unicode.IsControl) >= 0 {
			t.Fatalf("cleanHolder(%q) = %q", s, got)
		}
	})
}
