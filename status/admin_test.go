package status

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/schedule"
)

func TestParseUntil(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in      string
		until   time.Time
		healthy bool
		err     string
	}{
		{in: ""},
		{in: "healthy", healthy: true},
		{in: "2h", until: now.Add(2 * time.Hour)},
		{in: "1d", until: now.Add(24 * time.Hour)},
		{in: "2026-12-06T14:00:00Z", until: now.Add(2 * time.Hour)},
		{in: "2026-12-06T15:00:00+01:00", until: now.Add(2 * time.Hour)},
		{in: "2026-12-06T11:00:00Z", err: "not in the future"},
		{in: "0s", err: "must be positive"},
		{in: "-5m", err: "must be positive"},
		{in: "tomorrow", err: "want healthy, a duration"},
		{in: "Healthy", err: "want healthy, a duration"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			until, healthy, err := ParseUntil(tc.in, now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || !until.Equal(tc.until) || healthy != tc.healthy {
				t.Fatalf("%v, %v, %v; want %v, %v", until, healthy, err, tc.until, tc.healthy)
			}
		})
	}
}

// ParseUntil never panics, and what it takes ends after now.
func FuzzParseUntil(f *testing.F) {
	for _, s := range []string{"", "healthy", "2h", "1d", "1w", "2026-12-06T14:00:00Z", "2026-12-06T14:00:00+01:00", "-1s", "9999999999h", "1y2w"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		until, healthy, err := ParseUntil(s, now)
		if err != nil {
			return
		}
		if healthy && !until.IsZero() {
			t.Fatalf("%q: until healthy and until %v", s, until)
		}
		if !until.IsZero() && !until.After(now) {
			t.Fatalf("%q: until %v, not after now", s, until)
		}
	})
}

// adminRig is a tracker with one job, served by the admin API and the
// status handler, its log kept.
type adminRig struct {
	admin, pages http.Handler
	log          *bytes.Buffer
}

func newAdminRig(t *testing.T, enabled bool) *adminRig {
	t.Helper()
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return t0 }})
	tr.Configure([]model.JobSpec{{Name: "backup", Schedule: schedule.Every(time.Hour), StaleMultiple: 2, Scope: "host"}}, nil)
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	return &adminRig{
		admin: AdminHandler(tr, enabled, func() time.Time { return t0 }, logger),
		pages: &Handler{View: tr, Now: func() time.Time { return t0 }},
		log:   &log,
	}
}

func (r *adminRig) post(path string, form url.Values, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://jobwatch.example:10474"+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req.SetBasicAuth("alice", "s3cret")
	w := httptest.NewRecorder()
	mux := http.NewServeMux()
	mux.Handle(PausePath, r.admin)
	mux.Handle(ResumePath, r.admin)
	mux.ServeHTTP(w, req)
	return w
}

// Without --web.enable-admin-api every request is refused, naming the flag.
func TestAdminAPIDisabled(t *testing.T) {
	r := newAdminRig(t, false)
	w := r.post("/api/v1/jobs/backup/pause", url.Values{"reason": {"x"}})
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "--web.enable-admin-api") {
		t.Fatalf("%d %q, want 403 naming the flag", w.Code, w.Body)
	}
	if code, body := get(t, r.pages.(*Handler), "/api/v1/jobs/backup"); code != 200 || !strings.Contains(body, `"paused": null`) {
		t.Errorf("the refused pause paused the job: %s", body)
	}
}

// A pause through the API shows in the JSON and on the page, and is
// logged with who asked; a resume ends it; what is wrong is refused with
// the status that says so.
func TestAdminAPIPauseResume(t *testing.T) {
	r := newAdminRig(t, true)
	w := r.post("/api/v1/jobs/backup/pause", url.Values{"until": {"2h"}, "reason": {"db upgrade"}})
	if w.Code != 200 {
		t.Fatalf("pause: %d %s", w.Code, w.Body)
	}
	var ans PauseAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil || ans.Until == nil || !ans.Until.Equal(t0.Add(2*time.Hour)) || ans.Reason != "db upgrade" {
		t.Fatalf("answer %s (%v)", w.Body, err)
	}
	_, body := get(t, r.pages.(*Handler), "/api/v1/jobs/backup")
	var j Job
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		t.Fatal(err)
	}
	if j.State != StatePaused || j.Paused == nil || j.Paused.Why != "paused" || j.Paused.Reason != "db upgrade" || j.Paused.Until == nil || j.Unjudged["paused"] != 0 {
		t.Errorf("JSON of the paused job: %s", body)
	}
	if _, page := get(t, r.pages.(*Handler), "/status/job/backup"); !strings.Contains(page, `<p id="paused">Paused`) || !strings.Contains(page, "(db upgrade)") {
		t.Errorf("the job's page does not say it is paused and why")
	}
	if code, line := Check(j, CheckOptions{CriticalLate: time.Second}); code != CheckOK || !strings.Contains(line, "paused until 2026-") || !strings.Contains(line, "(db upgrade)") {
		t.Errorf("jobwatch check of the paused job: %d %q, want OK saying why", code, line)
	}
	if log := r.log.String(); !strings.Contains(log, `msg="admin API: job paused"`) || !strings.Contains(log, "user=alice") || strings.Contains(log, "s3cret") {
		t.Errorf("audit log %q: want the pause, the user, never the password", log)
	}

	for _, tc := range []struct {
		name, path string
		form       url.Values
		header     []string
		code       int
		says       string
	}{
		{"cross-site", "/api/v1/jobs/backup/resume", nil, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, ""},
		{"other origin", "/api/v1/jobs/backup/resume", nil, []string{"Origin", "https://evil.example"}, http.StatusForbidden, ""},
		{"unknown job", "/api/v1/jobs/nosuch/pause", nil, nil, http.StatusNotFound, `no such job: "nosuch"`},
		{"bad until", "/api/v1/jobs/backup/pause", url.Values{"until": {"soon"}}, nil, http.StatusBadRequest, "want healthy"},
		{"reason too long", "/api/v1/jobs/backup/pause", url.Values{"reason": {strings.Repeat("x", 201)}}, nil, http.StatusBadRequest, "at most 200"},
		{"reason with a newline", "/api/v1/jobs/backup/pause", url.Values{"reason": {"a\nb"}}, nil, http.StatusBadRequest, "control"},
		{"resume", "/api/v1/jobs/backup/resume", nil, nil, http.StatusOK, `"job":"backup"`},
		{"resume again", "/api/v1/jobs/backup/resume", nil, nil, http.StatusConflict, "not paused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := r.post(tc.path, tc.form, tc.header...)
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.says) {
				t.Errorf("%d %q, want %d saying %q", w.Code, w.Body, tc.code, tc.says)
			}
		})
	}
	if _, body := get(t, r.pages.(*Handler), "/api/v1/jobs/backup"); !strings.Contains(body, `"paused": null`) {
		t.Errorf("resumed, the JSON says %s", body)
	}
	req := httptest.NewRequest(http.MethodGet, "/api/v1/jobs/backup/pause", nil)
	w = httptest.NewRecorder()
	r.admin.ServeHTTP(w, req)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", w.Code)
	}
}
