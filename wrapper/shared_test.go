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

func TestSharedLockName(t *testing.T) {
	cases := []struct {
		name, job, layer, want, err string
	}{
		{"", "nightly", layerRedis, "jobwatch:nightly", ""},
		{"", "nightly", layerMySQL, "jobwatch.nightly", ""},
		{"site1.nightly", "nightly", layerMySQL, "site1.nightly", ""},
		{"", "j" + strings.Repeat("x", 60), layerMySQL, "", "at most 64"},
		{strings.Repeat("x", 65), "j", layerRedis, strings.Repeat("x", 65), ""},
		{strings.Repeat("x", 201), "j", layerRedis, "", "at most 200"},
		{"a b", "j", layerRedis, "", "may only contain"},
		{"a'b", "j", layerMySQL, "", "may only contain"},
		{"é", "j", layerMySQL, "", "may only contain"},
	}
	for _, tc := range cases {
		got, err := sharedLockName(tc.name, tc.job, tc.layer)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("sharedLockName(%q, %q, %s): %v, want an error with %q", tc.name, tc.job, tc.layer, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("sharedLockName(%q, %q, %s) = %q, %v; want %q", tc.name, tc.job, tc.layer, got, err, tc.want)
		}
	}
}
