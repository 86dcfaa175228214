package main

import (
	"fmt"
	"io"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/schedule"
)

// addScheduleCommand defines `jobwatch schedule`, which prints a job's next
// expected runs: the way to see what jobwatch expects across a DST change.
func addScheduleCommand(app *kingpin.Application) (*kingpin.CmdClause, func(stdout, stderr io.Writer) int) {
	cmd := app.Command("schedule", "Print a job's next expected runs, in RFC 3339 with the zone's offset.")
	file := cmd.Flag("config.file", "jobwatch configuration file.").Default("jobwatch.yml").String()
	job := cmd.Flag("job", "Job name.").Required().String()
	after := cmd.Flag("after", "Print the runs after this instant (RFC 3339; default: now).").String()
	count := cmd.Flag("count", "How many runs to print.").Default("10").Int()
	return cmd, func(stdout, stderr io.Writer) int {
		if err := printSchedule(stdout, *file, *job, *after, *count); err != nil {
			fmt.Fprintln(stderr, "jobwatch schedule:", err)
			return 1
		}
		return 0
	}
}

func printSchedule(w io.Writer, file, job, after string, count int) error {
	from := time.Now()
	if after != "" {
		t, err := time.Parse(time.RFC3339, after)
		if err != nil {
			return fmt.Errorf("--after: %w", err)
		}
		from = t
	}
	if count < 1 {
		return fmt.Errorf("--count must be at least 1")
	}
	cfg, err := config.Load(file)
	if err != nil {
		return err
	}
	for _, j := range cfg.Jobs {
		if j.Name != job {
			continue
		}
		s, err := schedule.New(j.ScheduleSpec(), nil)
		if err != nil {
			return fmt.Errorf("job %q: %w", job, err)
		}
		return schedule.WriteUpcoming(w, s, from, count, nil)
	}
	return fmt.Errorf("no job %q in %s", job, file)
}
