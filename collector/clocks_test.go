package collector

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jobwatch/jobwatch/model"
)

type clockView struct {
	steps [2]uint64
	skews []model.HostSkew
}

func (c clockView) ClockSteps() [2]uint64       { return c.steps }
func (c clockView) HostSkews() []model.HostSkew { return c.skews }

// TestClocks: the steps of this host's clock by direction, both always
// exported, and a series per host shown off, in seconds.
func TestClocks(t *testing.T) {
	c := NewClocks(clockView{steps: [2]uint64{1, 3}, skews: []model.HostSkew{{Host: "db1", Offset: 240 * time.Second}, {Host: "db2", Offset: -90500 * time.Millisecond}}})
	want := `
# HELP jobwatch_clock_steps_total Steps of this host's wall clock jobwatch has seen since it started (the wall clock moving by a second or more against the monotonic clock), by direction: forward or backward.
# TYPE jobwatch_clock_steps_total counter
jobwatch_clock_steps_total{direction="backward"} 3
jobwatch_clock_steps_total{direction="forward"} 1
# HELP jobwatch_host_clock_skew_seconds Estimated offset of a host's clock from this host's, from its records' times against when they were read: positive when it is ahead. Only hosts more than 10 s off, at most 100 (the largest offsets).
# TYPE jobwatch_host_clock_skew_seconds gauge
jobwatch_host_clock_skew_seconds{host="db1"} 240
jobwatch_host_clock_skew_seconds{host="db2"} -90.5
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
}
