package discover

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseTimespan(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		inf  bool
		err  bool
	}{
		{in: "30", want: 30 * time.Second},
		{in: "1us", want: time.Microsecond},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "10min", want: 10 * time.Minute},
		{in: "1h 30min", want: 90 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "2 hours", want: 2 * time.Hour},
		{in: "1.5h", want: 90 * time.Minute},
		{in: "1d", want: 24 * time.Hour},
		{in: "1w", want: 7 * 24 * time.Hour},
		{in: "infinity", inf: true},
		{in: "", err: true},
		{in: "5 fortnights", err: true},
		{in: "min", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			d, inf, err := parseTimespan(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("error = %v, want error %v", err, tc.err)
			}
			if d != tc.want || inf != tc.inf {
				t.Errorf("parseTimespan(%q) = %v, %v; want %v, %v", tc.in, d, inf, tc.want, tc.inf)
			}
		})
	}
}

// writeTree creates files (path -> content; content "->target" makes a
// symbolic link) under a new temporary root.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	writeTreeAt(t, root, files)
	return root
}

// writeTreeAt is writeTree into an existing root.
func writeTreeAt(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if len(content) > 2 && content[:2] == "->" {
			if err := os.Symlink(content[2:], full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadUnitDropins(t *testing.T) {
	root := writeTree(t, map[string]string{
		"/lib/systemd/system/a.timer":             "[Timer]\nOnCalendar=daily\nOnCalendar=Mon 02:00\nAccuracySec=1h\n",
		"/lib/systemd/system/a.timer.d/10-x.conf": "[Timer]\nAccuracySec=5min\n",
		"/etc/systemd/system/a.timer.d/10-x.conf": "[Timer]\n# resets the list, then one expression\nOnCalendar=\nOnCalendar=*-*-* 04:00\n",
		"/etc/systemd/system/a.timer.d/20-y.conf": "[Timer]\nRandomizedDelaySec=1min\n",
		"/etc/systemd/system/masked.timer":        "->/dev/null",
		"/lib/systemd/system/masked.timer":        "[Timer]\nOnCalendar=daily\n",
		"/lib/systemd/system/t@.service":          "[Service]\nExecStart=/bin/x %i\n",
	})
	sd := &systemd{root: root}
	u, masked := sd.readUnit("a.timer")
	if u == nil || masked {
		t.Fatalf("a.timer: unit %v, masked %v", u, masked)
	}
	var cal []string
	for _, s := range u.vals["Timer.OnCalendar"] {
		cal = append(cal, s.Value)
	}
	if want := []string{"*-*-* 04:00"}; !reflect.DeepEqual(cal, want) {
		t.Errorf("OnCalendar = %q, want %q (the /etc drop-in hides /lib's 10-x.conf and resets the list)", cal, want)
	}
	if s, _ := u.last("Timer.AccuracySec"); s.Value != "1h" {
		t.Errorf("AccuracySec = %q, want 1h: the hidden drop-in must not apply", s.Value)
	}
	if s, _ := u.last("Timer.RandomizedDelaySec"); s.Value != "1min" || s.File != "/etc/systemd/system/a.timer.d/20-y.conf" || s.Line != 2 {
		t.Errorf("RandomizedDelaySec = %+v", s)
	}
	if u, masked := sd.readUnit("masked.timer"); u != nil || !masked {
		t.Errorf("masked.timer: unit %v, masked %v; want masked", u, masked)
	}
	if u, _ := sd.readUnit("t@abc.service"); u == nil || u.File != "/lib/systemd/system/t@.service" {
		t.Errorf("t@abc.service: want the template, got %+v", u)
	}
	if u, masked := sd.readUnit("none.timer"); u != nil || masked {
		t.Errorf("none.timer: unit %v, masked %v", u, masked)
	}
}

// FuzzParseTimespan: any text parses or fails without a panic, never to a
// negative span.
func FuzzParseTimespan(f *testing.F) {
	for _, s := range []string{"30", "1us", "1h 30min", "1.5h", "infinity", "5 fortnights", "9999999999999y", ".", "1e9s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, inf, err := parseTimespan(s)
		if err == nil && !inf && d < 0 {
			t.Fatalf("parseTimespan(%q) = %v", s, d)
		}
	})
}

// FuzzParseUnitFile: any unit file text parses without a panic, every
// setting with a line inside the file.
func FuzzParseUnitFile(f *testing.F) {
	f.Add("[Timer]\nOnCalendar=daily\nOnCalendar=\nOnCalendar=Mon \\\n 02:00\n; comment\n# comment\n[Service]\nExecStart=/bin/x\n")
	f.Add("=\n[\n]\nA=B=C\n\\\n")
	f.Fuzz(func(t *testing.T, text string) {
		u := &unit{vals: map[string][]setting{}}
		parseUnitFile(u, []byte(text), "/f")
		lines := strings.Count(text, "\n") + 1
		for k, ss := range u.vals {
			for _, s := range ss {
				if s.Line < 1 || s.Line > lines || s.Value == "" {
					t.Fatalf("%s: setting %+v of %d lines", k, s, lines)
				}
			}
		}
	})
}
