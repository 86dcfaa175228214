package labelname

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	Reserve(func() []string { return []string{"job_name", "result"} })
	for _, tc := range []struct{ name, want string }{
		{"team", ""},
		{"_owner", ""},
		{"Tier2", ""},
		{"job_name", "reserved"},
		{"result", "reserved"},
		{"instance", "reserved"},
		{"severity", "reserved"},
		{"__meta", "names starting with __"},
		{"2nd", "must match"},
		{"bad-key", "must match"},
		{"", "must match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.name)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
