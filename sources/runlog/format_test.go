package runlog

import (
	"testing"

	"github.com/jobwatch/jobwatch/sources/runlog/record"
)

// A runlog source without format: names the four formats.
func TestFormatRequired(t *testing.T) {
	c := Config{Path: "/var/log/runs.log", Config: record.Config{}}
	errs := c.validate(nil)
	if len(errs) != 1 || errs[0].Error() != "format is required (json, logfmt, regex, cron)" {
		t.Errorf("errors %v, want one: format is required (json, logfmt, regex, cron)", errs)
	}
}
