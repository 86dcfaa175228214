package status

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// DefaultURL is where `jobwatch status` and `jobwatch check` find jobwatch:
// an address, not the name localhost, which the static binary's resolver
// looks up in /etc/hosts and then in DNS (a container's root made by
// debootstrap has no /etc/hosts: the lookup failed).
const DefaultURL = "http://127.0.0.1:10474"

// ErrUnknownJob: the running jobwatch does not watch the job.
var ErrUnknownJob = errors.New("unknown job")

// maxAPIBody bounds an API answer read by the commands.
const maxAPIBody = 64 << 20

// Fetch reads the report of the jobwatch at base (one job when job is
// set), of the jobs with every label of labels.
func Fetch(ctx context.Context, client *http.Client, base, job string, labels ...LabelMatch) (Report, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil {
		return Report{}, fmt.Errorf("url: %w", err)
	}
	path := "/api/v1/jobs"
	if job != "" {
		path += "/" + url.PathEscape(job)
	}
	u = u.JoinPath(path)
	if job == "" && len(labels) > 0 {
		u.RawQuery = labelQuery(labels).Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Report{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Report{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIBody))
	if err != nil {
		return Report{}, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && job != "":
		return Report{}, fmt.Errorf("%w %q", ErrUnknownJob, job)
	case resp.StatusCode != http.StatusOK:
		return Report{}, fmt.Errorf("%s: %s", u.Redacted(), resp.Status)
	}
	if job == "" {
		var rep Report
		if err := json.Unmarshal(body, &rep); err != nil {
			return Report{}, fmt.Errorf("%s: %w", u.Redacted(), err)
		}
		return rep, nil
	}
	var j Job
	if err := json.Unmarshal(body, &j); err != nil {
		return Report{}, fmt.Errorf("%s: %w", u.Redacted(), err)
	}
	return FilterLabels(Report{GeneratedAt: time.Now().UTC(), Jobs: []Job{j}}, labels), nil
}

// ANSI colours of the states, for a terminal.
var stateColour = map[string]string{
	StateStale: "\x1b[1;31m", StateFailing: "\x1b[31m", StateOverlapping: "\x1b[35m", StateLate: "\x1b[33m",
	StateRunning: "\x1b[34m", StateNeverSeen: "\x1b[2m", StateOK: "\x1b[32m", StateRetired: "\x1b[2m", StatePaused: "\x1b[2m",
}

// WriteTable prints one line a job; colour only for a terminal.
func WriteTable(w io.Writer, rep Report, colour bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATE\tLAST SUCCESS\tNEXT RUN\tLAST DURATION\tRUNNING\tSKIPS\tOVERLAPS\tMISSED")
	now := rep.GeneratedAt
	for _, j := range rep.Jobs {
		state := j.State
		if colour {
			// tabwriter counts the escape bytes too: pad them equally.
			state = stateColour[j.State] + state + "\x1b[0m"
		}
		running := "-"
		if len(j.Running) > 0 {
			var parts []string
			for _, r := range j.Running {
				p := r.Host
				if r.PID > 0 {
					p += fmt.Sprintf(":%d", r.PID)
				}
				parts = append(parts, p+" "+durText(r.AgeSeconds))
			}
			running = strings.Join(parts, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", j.Name, state, ago(now, j.LastSuccess), until(now, j.NextRun),
			durPtr(j.LastDurationSeconds), running, j.Skips, j.Overlaps, j.Missed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, j := range rep.Jobs {
		if j.Note != "" {
			if _, err := fmt.Fprintf(w, "%s: %s\n", j.Name, j.Note); err != nil {
				return err
			}
		}
	}
	return nil
}

// Nagios plugin exit codes.
const (
	CheckOK       = 0
	CheckWarning  = 1
	CheckCritical = 2
	CheckUnknown  = 3
)

// CheckOptions are the thresholds of `jobwatch check`, beyond the job's own
// state: seconds since the last success above Warning or Critical (0: not
// checked).
type CheckOptions struct {
	WarningLate, CriticalLate time.Duration
}

// Check judges one job by Nagios plugin conventions and returns the exit code
// and the one line of output, with performance data.
func Check(j Job, o CheckOptions) (int, string) {
	code, why := CheckOK, j.State
	if j.RetiredSince != nil {
		// Gone from the host: nothing to check, whatever it last did.
		return code, fmt.Sprintf("JOBWATCH OK - %s: retired since %s, gone from the host", j.Name, j.RetiredSince.Format(time.RFC3339))
	}
	if j.Paused != nil {
		// Told "not now": nothing is judged until the pause ends.
		return code, fmt.Sprintf("JOBWATCH OK - %s: %s", j.Name, j.Paused.text())
	}
	worse := func(c int, reason string) {
		if c > code {
			code, why = c, reason
		}
	}
	since := time.Duration(j.SecondsSinceLastSuccess * float64(time.Second))
	// Critical at the failures in a row the bundled rules page at: the
	// job's alert_after (an older jobwatch's API has none: the default).
	failAt := cmp.Or(j.AlertAfter.Failures, model.DefaultAlertAfter.Failures)
	switch {
	case j.State == StateStale:
		worse(CheckCritical, "stale: no success for "+durText(j.SecondsSinceLastSuccess))
	case j.LastRunFailed && j.HeldEnds == 0 && j.ConsecutiveFailures >= uint64(failAt):
		// The last run's result is a fact, shown when read; how many
		// failed in a row is a verdict, counted once the watermark has
		// passed every end read.
		worse(CheckCritical, fmt.Sprintf("failing: %d runs in a row failed", j.ConsecutiveFailures))
	case j.LastRunFailed && j.HeldEnds == 0 && j.ConsecutiveFailures > 1:
		worse(CheckWarning, fmt.Sprintf("%d runs in a row failed (alert_after.failures: %d)", j.ConsecutiveFailures, failAt))
	case j.LastRunFailed:
		worse(CheckWarning, "the last run failed")
	}
	if len(j.Running) > 1 {
		worse(CheckCritical, fmt.Sprintf("overlapping: %d runs in progress", len(j.Running)))
	}
	if j.State == StateLate {
		worse(CheckWarning, "late: an expected run has not started")
	}
	if j.ConsecutiveSkips > 0 {
		worse(CheckWarning, fmt.Sprintf("skipping: %d skips in a row", j.ConsecutiveSkips))
	}
	if j.ConsecutiveMissed > 0 {
		worse(CheckWarning, fmt.Sprintf("missed: %d expected runs in a row did not start", j.ConsecutiveMissed))
	}
	if j.State == StateNeverSeen {
		worse(CheckWarning, "never seen: no record of the job yet")
	}
	if o.CriticalLate > 0 && since > o.CriticalLate {
		worse(CheckCritical, "no success for "+durText(j.SecondsSinceLastSuccess))
	} else if o.WarningLate > 0 && since > o.WarningLate {
		worse(CheckWarning, "no success for "+durText(j.SecondsSinceLastSuccess))
	}
	if j.Note != "" {
		why += "; " + j.Note // "no success" of a job whose results are not logged
	}
	label := [...]string{"OK", "WARNING", "CRITICAL", "UNKNOWN"}[code]
	thr := func(d time.Duration) string {
		if d <= 0 {
			return ""
		}
		return fmt.Sprintf("%.0f", d.Seconds())
	}
	perf := fmt.Sprintf("'seconds_since_success'=%.0fs;%s;%s;; 'consecutive_failures'=%d;;;; 'running'=%d;;;;",
		j.SecondsSinceLastSuccess, thr(o.WarningLate), thr(o.CriticalLate), j.ConsecutiveFailures, len(j.Running))
	return code, fmt.Sprintf("JOBWATCH %s - %s: %s | %s", label, j.Name, why, perf)
}
