package remote

import (
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/wrapper"
)

func TestSharedLockName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, job, layer, want, err string
	}{
		{"", "nightly", wrapper.LayerRedis, "jobwatch:nightly", ""},
		{"", "nightly", wrapper.LayerMySQL, "jobwatch.nightly", ""},
		{"site1.nightly", "nightly", wrapper.LayerMySQL, "site1.nightly", ""},
		{"", "j" + strings.Repeat("x", 60), wrapper.LayerMySQL, "", "at most 64"},
		{strings.Repeat("x", 65), "j", wrapper.LayerRedis, strings.Repeat("x", 65), ""},
		{strings.Repeat("x", 201), "j", wrapper.LayerRedis, "", "at most 200"},
		{"a b", "j", wrapper.LayerRedis, "", "may only contain"},
		{"a'b", "j", wrapper.LayerMySQL, "", "may only contain"},
		{"é", "j", wrapper.LayerMySQL, "", "may only contain"},
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
