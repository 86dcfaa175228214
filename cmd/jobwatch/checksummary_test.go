package main

import "testing"

// check-config's line: "1 job", "1 source", plurals otherwise.
func TestCheckSummary(t *testing.T) {
	for _, tc := range []struct {
		jobs, host, sources int
		root, want          string
	}{
		{1, 0, 1, "", "c.yml: 1 job, 1 source: OK"},
		{0, 0, 0, "", "c.yml: 0 jobs, 0 sources: OK"},
		{2, 0, 3, "", "c.yml: 2 jobs, 3 sources: OK"},
		{1, 1, 1, "/", "c.yml: 1 job (1 of them discovered on the host under /), 1 source: OK"},
		{12, 12, 2, "/srv", "c.yml: 12 jobs (12 of them discovered on the host under /srv), 2 sources: OK"},
	} {
		if got := checkSummary("c.yml", tc.jobs, tc.host, tc.root, tc.sources); got != tc.want {
			t.Errorf("checkSummary(%d, %d, %q, %d) = %q, want %q", tc.jobs, tc.host, tc.root, tc.sources, got, tc.want)
		}
	}
}
