package status

import (
	"strings"
	"testing"
	"time"
)

// Jobs check-ins made or proposed show on the index, below the sources,
// each with its jobs: entry escaped; none, no section.
func TestIndexProposals(t *testing.T) {
	h := &Handler{View: fixture(t), Now: func() time.Time { return t0 }}
	if _, body := get(t, h, "/status"); strings.Contains(body, `id="proposals"`) {
		t.Errorf("a proposals section without proposals")
	}
	h.Proposals = func() []Proposal {
		return []Proposal{
			{Identifier: "reports", Origin: "Sentry monitor_config", Entry: "- name: reports\n  schedule: \"0 3 * * *\"\n  aliases: [reports]\n"},
			{Identifier: "tmp-x", Origin: "Healthchecks ?create=1", Entry: "- name: tmp-x\n  every: 1h\n  aliases: [<b>]\n", Created: true},
		}
	}
	code, body := get(t, h, "/status")
	for _, want := range []string{
		`<h2>Jobs for jobwatch.yml</h2>`,
		`<tr data-identifier="reports"><td><code>reports</code></td><td>Sentry monitor_config</td><td>proposed, not watched</td><td><pre>- name: reports
  schedule: &#34;0 3 * * *&#34;`,
		`<td>created, watched</td>`,
		`aliases: [&lt;b&gt;]`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/status: %d, lacks %q", code, want)
		}
	}
	if _, body := get(t, h, "/api/v1/jobs"); strings.Contains(body, "reports") {
		t.Errorf("the API lists proposals: %s", body)
	}
}
