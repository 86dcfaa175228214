package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/jobwatch/jobwatch/status"
)

// addPauseCommands adds `jobwatch pause` and `jobwatch resume` to cmds:
// clients of a running jobwatch's admin API (docs/ownership.md).
func addPauseCommands(app *kingpin.Application, cmds map[string]func(stdout, stderr io.Writer) int, urlFlag func(*kingpin.CmdClause) *string) {
	pa := app.Command("pause", "Pause a job in a running jobwatch (needs "+status.AdminFlag+"): its expected runs are not judged and it is not stale until resumed.")
	paURL, paJob := urlFlag(pa), pa.Flag("job", "Job name.").Required().String()
	paUntil := pa.Flag("until", "End of the pause: a time (2026-12-06T14:00:00Z), a duration from now (2h, 1d), or healthy (the job's next success); default: until jobwatch resume.").PlaceHolder("TIME|DURATION|healthy").String()
	paReason := pa.Flag("reason", "Why, shown on the status page and logged.").String()
	cmds[pa.FullCommand()] = func(stdout, stderr io.Writer) int {
		// Checked here too, to say what is wrong before asking; the
		// running jobwatch reads it by its own clock.
		if _, _, err := status.ParseUntil(*paUntil, time.Now()); err != nil {
			fmt.Fprintln(stderr, "jobwatch pause:", err)
			return 2
		}
		ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
		defer cancel()
		ans, err := status.PauseJob(ctx, &http.Client{Timeout: clientTimeout}, *paURL, *paJob, *paUntil, *paReason)
		if err != nil {
			fmt.Fprintln(stderr, "jobwatch pause:", err)
			return 1
		}
		until := "until resumed"
		switch {
		case ans.UntilHealthy:
			until = "until its next success"
		case ans.Until != nil:
			until = "until " + ans.Until.Local().Format(time.RFC3339)
		}
		fmt.Fprintf(stdout, "%s paused since %s, %s\n", ans.Job, ans.Since.Local().Format(time.RFC3339), until)
		return 0
	}

	re := app.Command("resume", "End a job's pause in a running jobwatch (needs "+status.AdminFlag+"): it is judged again from now.")
	reURL, reJob := urlFlag(re), re.Flag("job", "Job name.").Required().String()
	cmds[re.FullCommand()] = func(stdout, stderr io.Writer) int {
		ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
		defer cancel()
		if err := status.ResumeJob(ctx, &http.Client{Timeout: clientTimeout}, *reURL, *reJob); err != nil {
			fmt.Fprintln(stderr, "jobwatch resume:", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s resumed\n", *reJob)
		return 0
	}
}
