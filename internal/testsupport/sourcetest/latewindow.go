// Package sourcetest holds the tests every source of runs shares.
package sourcetest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/sources"
)

// LateWindow describes a source type's block for LateWindowKey.
type LateWindow struct {
	// Head is the source's entry up to its own keys: name, type and any
	// key that has to come first, one per line, indented as under
	// sources: ("  - name: runs\n    type: runlog\n").
	Head string
	// Name is the source's name; Valid, keys that make the block valid;
	// Broken, keys that leave it invalid, with the error BrokenErr.
	Name          string
	Valid, Broken []string
	BrokenErr     string
	Default       time.Duration
}

// LateWindowKey checks a source type's late_window key: parsed in
// Prometheus' syntax, defaulted when unset or 0, refused when negative (with
// the block's other errors), and a bad duration named with its line.
func LateWindowKey(t *testing.T, lw LateWindow) {
	t.Helper()
	line := strings.Count("jobs: [{name: a, every: 1h}]\nsources:\n"+lw.Head, "\n") + len(lw.Valid) + 1
	with := func(keys []string, more ...string) []string { return append(append([]string(nil), keys...), more...) }
	for _, tc := range []struct {
		name  string
		block []string
		want  time.Duration
		errs  []string
	}{
		{"default", lw.Valid, lw.Default, nil},
		{"zero is the default", with(lw.Valid, "late_window: 0s"), lw.Default, nil},
		{"set", with(lw.Valid, "late_window: 45s"), 45 * time.Second, nil},
		{"Prometheus syntax", with(lw.Valid, "late_window: 1h"), time.Hour, nil},
		{"negative", with(lw.Valid, "late_window: -1s"), 0, []string{"late_window must not be negative"}},
		{"negative, with another error", with(lw.Broken, "late_window: -1s"), 0, []string{"late_window must not be negative", lw.BrokenErr}},
		{"not a duration", with(lw.Valid, "late_window: soon"), 0, []string{`line ` + strconv.Itoa(line) + `: bad duration "soon"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yml := "jobs: [{name: a, every: 1h}]\nsources:\n" + lw.Head + "    " + strings.Join(tc.block, "\n    ") + "\n"
			cfg, err := config.Parse(strings.NewReader(yml))
			if len(tc.errs) > 0 {
				if err == nil {
					t.Fatalf("accepted:\n%s", yml)
				}
				for _, w := range tc.errs {
					if !strings.Contains(err.Error(), `source "`+lw.Name+`": `+w) {
						t.Errorf("no error of the source saying %q in:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rr, ok := cfg.Sources[0].Config.(sources.RunReporter)
			if !ok {
				t.Fatalf("%T reports no runs", cfg.Sources[0].Config)
			}
			if got := rr.LateWindow(); got != tc.want {
				t.Errorf("LateWindow() = %v, want %v", got, tc.want)
			}
		})
	}
}
