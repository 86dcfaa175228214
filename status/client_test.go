package status

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestFetchAndTable(t *testing.T) {
	srv := httptest.NewServer(&Handler{View: fixture(t), Now: func() time.Time { return t0 }})
	defer srv.Close()
	rep, err := Fetch(context.Background(), srv.Client(), srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rep, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "status.txt", b.Bytes())
	b.Reset()
	WriteTable(&b, rep, true)
	if !strings.Contains(b.String(), "\x1b[1;31mstale\x1b[0m") {
		t.Error("no colour on a terminal")
	}
	one, err := Fetch(context.Background(), srv.Client(), srv.URL, "stats")
	if err != nil || len(one.Jobs) != 1 || one.Jobs[0].Name != "stats" {
		t.Fatalf("one job: %+v %v", one, err)
	}
	// --label: the jobs with the label, asked of the API; one job
	// without it is no job.
	platform := []LabelMatch{{"team", "platform"}}
	byLabel, err := Fetch(context.Background(), srv.Client(), srv.URL, "", platform...)
	if err != nil || len(byLabel.Jobs) != 1 || byLabel.Jobs[0].Name != "backup" {
		t.Errorf("--label team=platform: %+v %v", byLabel.Jobs, err)
	}
	if none, err := Fetch(context.Background(), srv.Client(), srv.URL, "stats", platform...); err != nil || len(none.Jobs) != 0 {
		t.Errorf("--job stats --label team=platform: %+v %v", none.Jobs, err)
	}
	if _, err := Fetch(context.Background(), srv.Client(), srv.URL, "nosuch"); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("unknown job: %v", err)
	}
	if _, err := Fetch(context.Background(), srv.Client(), "http://127.0.0.1:1", ""); err == nil {
		t.Error("no error from an address nothing listens on")
	}
}

func TestCheck(t *testing.T) {
	jv, sv := fixture(t).View()
	rep := Build(jv, sv, t0)
	jobs := map[string]Job{}
	for _, j := range rep.Jobs {
		jobs[j.Name] = j
	}
	overlapping := jobs["stats"]
	overlapping.Running = append(overlapping.Running, overlapping.Running[0])
	oneFailure := jobs["backup"]
	oneFailure.ConsecutiveFailures = 1
	okJob := jobs["stats"]
	okJob.State, okJob.Running, okJob.ConsecutiveSkips = StateOK, nil, 0
	// backup sets alert_after.failures: 3; an older jobwatch's API has
	// no alert_after (the default, 2).
	thirdFailure := jobs["backup"]
	thirdFailure.ConsecutiveFailures = 3
	olderAPI := jobs["backup"]
	olderAPI.AlertAfter = AlertAfter{}
	skipping := okJob
	skipping.ConsecutiveSkips = 3
	for _, tc := range []struct {
		name string
		job  Job
		o    CheckOptions
		code int
		line string
	}{
		{"ok", okJob, CheckOptions{}, CheckOK, "JOBWATCH OK - stats: ok | 'seconds_since_success'=360s;;;; 'consecutive_failures'=0;;;; 'running'=0;;;;"},
		{"skipping", skipping, CheckOptions{}, CheckWarning, "JOBWATCH WARNING - stats: skipping: 3 skips in a row"},
		{"running", jobs["stats"], CheckOptions{}, CheckOK, "JOBWATCH OK - stats: running"},
		{"late", jobs["report"], CheckOptions{}, CheckWarning, "JOBWATCH WARNING - report: late: an expected run has not started"},
		{"one failure", oneFailure, CheckOptions{}, CheckWarning, "JOBWATCH WARNING - backup: the last run failed"},
		{"never seen", jobs["fresh"], CheckOptions{}, CheckWarning, "JOBWATCH WARNING - fresh: never seen"},
		{"stale", jobs["cleanup"], CheckOptions{}, CheckCritical, "JOBWATCH CRITICAL - cleanup: stale: no success for 2h59m"},
		{"failing below alert_after", jobs["backup"], CheckOptions{}, CheckWarning, "JOBWATCH WARNING - backup: 2 runs in a row failed (alert_after.failures: 3)"},
		{"failing at alert_after", thirdFailure, CheckOptions{}, CheckCritical, "JOBWATCH CRITICAL - backup: failing: 3 runs in a row failed"},
		{"failing, default", olderAPI, CheckOptions{}, CheckCritical, "JOBWATCH CRITICAL - backup: failing: 2 runs in a row failed"},
		{"overlapping", overlapping, CheckOptions{}, CheckCritical, "JOBWATCH CRITICAL - stats: overlapping: 2 runs in progress"},
		{"warning threshold", okJob, CheckOptions{WarningLate: time.Minute, CriticalLate: time.Hour}, CheckWarning,
			"JOBWATCH WARNING - stats: no success for 6m00s | 'seconds_since_success'=360s;60;3600;;"},
		{"critical threshold", okJob, CheckOptions{CriticalLate: time.Minute}, CheckCritical, "JOBWATCH CRITICAL - stats: no success for 6m00s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, line := Check(tc.job, tc.o)
			if code != tc.code || !strings.HasPrefix(line, tc.line) {
				t.Errorf("Check = %d %q\nwant   %d %q...", code, line, tc.code, tc.line)
			}
		})
	}
}

var _ = http.StatusOK

// FuzzLabelMatches: any list of flags is matches or an error; a match
// written back reads the same, and a job with the labels matches them.
func FuzzLabelMatches(f *testing.F) {
	for _, s := range []string{"team=payments", "team=", "=x", "team", "a=b=c", ""} {
		f.Add(s, "owner=alice")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ms, err := ParseLabelMatches([]string{a, b})
		if err != nil {
			return
		}
		j := Job{Labels: map[string]string{}}
		for _, m := range ms {
			again, err := ParseLabelMatches([]string{m.String()})
			if err != nil || len(again) != 1 || again[0] != m {
				t.Fatalf("%q reads back as %v, %v", m, again, err)
			}
			j.Labels[m.Name] = m.Value
		}
		if len(ms) == 2 && ms[0].Name == ms[1].Name && ms[0].Value != ms[1].Value {
			if j.Matches(ms) {
				t.Fatalf("a job matches %v, two values of one label", ms)
			}
			return
		}
		if !j.Matches(ms) {
			t.Fatalf("a job with %v does not match them", j.Labels)
		}
	})
}
