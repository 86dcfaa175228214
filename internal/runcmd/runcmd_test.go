package runcmd

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90s", 90 * time.Second, true},
		{"1h30m", 90 * time.Minute, true},
		{"1d", 24 * time.Hour, true}, // as Prometheus and the config file write it
		{"1w2d", 9 * 24 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"0", 0, true},
		{"30", 30 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{"-1", -time.Second, true}, // refused later by wrapper.Run, with the flag's name
		{"5x", 0, false},
		{"", 0, false},
		{"NaN", 0, false},
		{"1e300", 0, false},
	}
	for _, tc := range cases {
		got, err := ParseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90s", "30", "0.5", "1e300", "-Inf", "1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ParseDuration(s)
	})
}
