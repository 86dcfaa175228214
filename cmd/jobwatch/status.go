package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/jobwatch/jobwatch/status"
)

// clientTimeout bounds a terminal command's wait for a running jobwatch.
const clientTimeout = 10 * time.Second

// addStatusCommands defines `jobwatch status`, `jobwatch check` and
// `jobwatch advise`: the status API of a running jobwatch, for terminals,
// Nagios-style checks and timeout advice (docs/status.md).
func addStatusCommands(app *kingpin.Application) map[string]func(stdout, stderr io.Writer) int {
	cmds := map[string]func(stdout, stderr io.Writer) int{}
	urlFlag := func(c *kingpin.CmdClause) *string {
		return c.Flag("url", "URL of the running jobwatch (basic auth as https://user:password@host:port).").Default(status.DefaultURL).String()
	}

	st := app.Command("status", "Print the jobs' state from a running jobwatch.")
	stURL, stJob := urlFlag(st), st.Flag("job", "Only this job.").String()
	stFormat := st.Flag("format", "table or json.").Default("table").Enum("table", "json")
	stLabels := st.Flag("label", "Only the jobs with this label, as NAME=VALUE (team=payments); repeat for several, all of which a job must have.").Strings()
	cmds[st.FullCommand()] = func(stdout, stderr io.Writer) int {
		labels, err := status.ParseLabelMatches(*stLabels)
		if err != nil {
			fmt.Fprintln(stderr, "jobwatch status:", err)
			return 2
		}
		rep, err := fetch(*stURL, *stJob, labels...)
		if err != nil {
			fmt.Fprintln(stderr, "jobwatch status:", err)
			return 1
		}
		if *stFormat == "json" {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return 1
			}
			return 0
		}
		if err := status.WriteTable(stdout, rep, colour(stdout)); err != nil {
			return 1
		}
		return 0
	}

	ck := app.Command("check", "Check one job by Nagios plugin conventions: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.")
	ckURL, ckJob := urlFlag(ck), ck.Flag("job", "Job name.").Required().String()
	var o status.CheckOptions
	ck.Flag("warning-late", "WARNING when the job has not succeeded for longer than this.").DurationVar(&o.WarningLate)
	ck.Flag("critical-late", "CRITICAL when the job has not succeeded for longer than this.").DurationVar(&o.CriticalLate)
	cmds[ck.FullCommand()] = func(stdout, _ io.Writer) int {
		rep, err := fetch(*ckURL, *ckJob)
		if err != nil {
			fmt.Fprintf(stdout, "JOBWATCH UNKNOWN - %s: %v\n", *ckJob, err)
			return status.CheckUnknown
		}
		code, line := status.Check(rep.Jobs[0], o)
		fmt.Fprintln(stdout, line)
		return code
	}

	ad := app.Command("advise", "Print each job's recent durations and the timeout and lock TTL they call for.")
	adURL, adJob := urlFlag(ad), ad.Flag("job", "Only this job.").String()
	cmds[ad.FullCommand()] = func(stdout, stderr io.Writer) int {
		rep, err := fetch(*adURL, *adJob)
		if err != nil {
			fmt.Fprintln(stderr, "jobwatch advise:", err)
			return 1
		}
		if err := status.WriteAdvice(stdout, rep); err != nil {
			return 1
		}
		return 0
	}
	addPauseCommands(app, cmds, urlFlag)
	return cmds
}

func fetch(url, job string, labels ...status.LabelMatch) (status.Report, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	rep, err := status.Fetch(ctx, &http.Client{Timeout: clientTimeout}, url, job, labels...)
	if errors.Is(err, status.ErrUnknownJob) {
		return rep, fmt.Errorf("%w (not configured in the jobwatch at %s)", err, url)
	}
	return rep, err
}

// colour: only on a terminal, and not when NO_COLOR is set.
func colour(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
