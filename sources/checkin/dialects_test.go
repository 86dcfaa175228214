package checkin

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/config"
)

const (
	hcUUID  = "5bf66975-d4c7-4bf5-bcc8-b8d8a82ea278"
	hcKey   = "fqOOd6-F4MMNuCEnzTU01w"
	sKey    = "0123456789abcdef0123456789abcdef"
	cKey    = "cronitorTelemetryKey1"
	dialCfg = `
jobs:
  - name: backup
    every: 1d
    aliases: [` + hcUUID + `, db-backup, nightly]
  - name: sync
    every: 1h
checkins:
  enabled: true
  max_body: 1000
  root_paths: true
  keys:
    healthchecks: [` + hcKey + `, otherProjectKey22chars]
    sentry: ` + sKey + `
    cronitor: ` + cKey + `
`
)

// dialectReceiver is a receiver configured by dialCfg, its clock at *now.
func dialectReceiver(t *testing.T, dir string, rej *rejects, now *time.Time) *Receiver {
	t.Helper()
	o := Options{Dir: dir, Now: func() time.Time { return *now }, OnReject: rej.add}
	r, err := OpenReceiver(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	cfg, err := config.Parse(strings.NewReader(dialCfg))
	if err != nil {
		t.Fatal(err)
	}
	if r.Configure(cfg) == nil {
		t.Fatal("check-ins off")
	}
	return r
}

// brief is a spool record as the tests compare it: event, status, exit
// code, run id, output, time relative to t0.
func brief(rec spoolRecord) string {
	s := rec.Job + " " + rec.Event
	if rec.Status != "" {
		s += " " + rec.Status
	}
	if rec.ExitCode != nil {
		s += fmt.Sprintf(" exit=%d", *rec.ExitCode)
	}
	if rec.RunID != "" {
		s += " rid=" + rec.RunID
	}
	if rec.Output != "" {
		s += fmt.Sprintf(" output=%q", rec.Output)
	}
	if d := rec.Time.Sub(t0); d != 0 {
		s += " at=" + d.String()
	}
	return s
}

// Every Healthchecks URL shape is stored as the check-in it is, answered
// as Healthchecks answers it; jobwatch's own /ping/JOB keeps its answer.
func TestHealthchecksURLs(t *testing.T) {
	now := t0
	var rej rejects
	dir := t.TempDir()
	r := dialectReceiver(t, dir, &rej, &now)
	const rid = "0b6f1d8e-4a8e-4c39-9f1e-5c2a7d3e9b10"
	for _, tc := range []struct {
		method, target, body string
		code                 int
		answer               string
		want                 string // the record stored; "": none
	}{
		{"GET", "/ping/" + hcUUID, "", 200, "OK", "backup end success"},
		{"HEAD", "/ping/" + hcUUID + "/", "", 200, "", "backup end success"},
		{"POST", "/ping/" + hcUUID + "/start?rid=" + rid, "", 200, "OK", "backup start rid=" + rid},
		{"POST", "/ping/" + hcUUID + "/fail?rid=" + rid, "disk full\n", 200, "OK", `backup end failure rid=` + rid + ` output="disk full\n"`},
		{"POST", "/ping/" + hcUUID + "/log", "50% done", 200, "OK", `backup log output="50% done"`},
		{"GET", "/ping/" + hcUUID + "/0", "", 200, "OK", "backup end success exit=0"},
		{"POST", "/ping/" + hcUUID + "/3", "oops", 200, "OK", `backup end failure exit=3 output="oops"`},
		{"GET", "/ping/" + hcKey + "/db-backup", "", 200, "OK", "backup end success"},
		{"GET", "/ping/otherProjectKey22chars/nightly/start", "", 200, "OK", "backup start"},
		{"POST", "/ping/" + hcKey + "/backup/1", "", 200, "OK", "backup end failure exit=1"},
		{"GET", "/ping/" + hcKey + "/sync/", "", 200, "OK", "sync end success"},
		{"GET", "/" + hcUUID + "/start", "", 200, "OK", "backup start"},
		{"GET", "/" + hcKey + "/db-backup/fail", "", 200, "OK", "backup end failure"},
		{"GET", "/ping/sync", "", 200, "OK\n", "sync end success"},
		{"GET", "/ping/" + hcUUID + "/256", "", 400, "invalid url format\n", ""},
		{"GET", "/ping/" + hcUUID + "?rid=nope", "", 400, "invalid uuid format\n", ""},
		{"GET", "/ping/" + hcKey + "/DB-Backup", "", 400, "invalid url format\n", ""},
		{"GET", "/ping/2b4b0b55-6df5-4f39-8f3a-2bfba2f1d4a0", "", 404, "not found\n", ""},
		{"GET", "/ping/" + hcKey + "/nosuch", "", 404, "not found\n", ""},
		{"GET", "/ping/wrongKeyOfTwentyTwo00/db-backup", "", 404, "not found\n", ""},
		{"GET", "/ping/wrongKeyOfTwentyTwo00/db-backup/start", "", 404, "not found\n", ""},
		{"POST", "/ping/" + hcUUID, strings.Repeat("x", 1001), 413, "body larger than max_body (1000 bytes)\n", ""},
		{"POST", "/ping/" + hcUUID, "", 403, "cross-site check-ins are refused\n", ""},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			before := len(spooled(t, dir))
			var hdr []string
			if tc.code == 403 {
				hdr = []string{"Sec-Fetch-Site", "cross-site"}
			}
			w := do(r, tc.method, tc.target, tc.body, hdr...)
			if w.Code != tc.code || tc.method != "HEAD" && w.Body.String() != tc.answer {
				t.Errorf("answer %d %q, want %d %q", w.Code, w.Body, tc.code, tc.answer)
			}
			if tc.code == 200 && w.Header().Get("Ping-Body-Limit") != "1000" {
				t.Errorf("Ping-Body-Limit %q", w.Header().Get("Ping-Body-Limit"))
			}
			got := spooled(t, dir)[before:]
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("stored %+v", got)
			case tc.want != "" && (len(got) != 1 || brief(got[0]) != tc.want):
				var s []string
				for _, g := range got {
					s = append(s, brief(g))
				}
				t.Errorf("stored %q, want %q", s, tc.want)
			}
		})
	}
	want := map[string]int{RejectBadExitCode: 1, RejectBadRunID: 1, RejectBadPath: 1, RejectUnknownJob: 2, RejectWrongKey: 2,
		RejectBodyTooLarge: 1, RejectCrossSite: 1}
	if fmt.Sprint(rej.n) != fmt.Sprint(want) {
		t.Errorf("refused %v, want %v", rej.n, want)
	}
}

// A /log is stored with its output and is no run: the source reads past
// it without a parse error.
func TestLogIsNoRun(t *testing.T) {
	now := t0
	dir := t.TempDir()
	r := dialectReceiver(t, dir, &rejects{}, &now)
	for _, target := range []string{"/ping/" + hcUUID + "/start", "/ping/" + hcUUID + "/log", "/ping/" + hcUUID} {
		if w := do(r, "POST", target, "line"); w.Code != 200 {
			t.Fatalf("%s: %d", target, w.Code)
		}
	}
	lines, next, err := readLines(dir, Position{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	b := r.Source().batchOf(lines, next)
	if len(b.Events) != 2 || b.ParseErrors != 0 || b.Events[0].Kind.String() != "start" || b.Events[1].Kind.String() != "end" {
		t.Errorf("batch %+v", b)
	}
}

// runitor's requests (github.com/bdd/runitor, internal/api.go): a POST of
// <base>/<uuid>/start?rid=..., the command's output as the body of
// <base>/<uuid>/<exit code>?rid=..., each retried on a 5xx; and the same
// with -ping-key and -slug, <base>/<ping-key>/<slug>/... . Its User-Agent,
// its Content-Type, and its body cut to Ping-Body-Limit.
func TestRunitorRequests(t *testing.T) {
	now := t0
	dir := t.TempDir()
	r := dialectReceiver(t, dir, &rejects{}, &now)
	const rid = "7e2b3c4d-1f2a-4b3c-8d9e-0a1b2c3d4e5f"
	for _, base := range []string{"/ping/" + hcUUID, "/ping/" + hcKey + "/db-backup"} {
		start := do(r, "POST", base+"/start?rid="+rid, "", "User-Agent", "runitor/v1.3.0 (+https://bdd.fi/x/runitor)", "Content-Type", "text/plain")
		if start.Code != 200 || start.Header().Get("Ping-Body-Limit") != "1000" {
			t.Fatalf("start: %d %q", start.Code, start.Header())
		}
		// runitor cuts its body to the limit the start's answer gave.
		body := strings.Repeat("x", 990) + "exit 2"
		end := do(r, "POST", base+"/2?rid="+rid, body, "User-Agent", "runitor/v1.3.0 (+https://bdd.fi/x/runitor)", "Content-Type", "text/plain")
		if end.Code != 200 || end.Body.String() != "OK" {
			t.Fatalf("end: %d %s", end.Code, end.Body)
		}
		// A retry after a lost answer is acknowledged and applied once.
		if again := do(r, "POST", base+"/2?rid="+rid, body); again.Code != 200 {
			t.Fatalf("retry: %d", again.Code)
		}
	}
	var got []string
	for _, rec := range spooled(t, dir) {
		rec.Output = fmt.Sprint(len(rec.Output))
		got = append(got, brief(rec))
	}
	want := []string{"backup start rid=" + rid + ` output="0"`, "backup end failure exit=2 rid=" + rid + ` output="996"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Cronitor's telemetry: state, status_code, duration, series as the run.
func TestCronitorURLs(t *testing.T) {
	now := t0
	var rej rejects
	dir := t.TempDir()
	r := dialectReceiver(t, dir, &rej, &now)
	p := "/p/" + cKey + "/nightly"
	for _, tc := range []struct {
		target string
		code   int
		want   []string
	}{
		{p + "?state=run&series=abc", 200, []string{"backup start rid=" + runID("backup", "abc")}},
		{p + "?state=complete&series=abc&status_code=0&duration=12.5", 200, []string{"backup end success exit=0 rid=" + runID("backup", "abc")}},
		{p + "?state=fail&status_code=3&message=boom&duration=60", 200, []string{
			"backup start rid=" + runID("backup", t0.Format(time.RFC3339Nano)) + " at=-1m0s",
			"backup end failure exit=3 rid=" + runID("backup", t0.Format(time.RFC3339Nano)) + ` output="boom"`}},
		{p, 200, []string{"backup end success"}},
		{p + "?state=ok&host=web1", 200, []string{"backup end success"}},
		{p + "?state=maybe", 400, nil},
		{p + "?status_code=300", 400, nil},
		{p + "?duration=-1", 400, nil},
		{"/p/wrongTelemetryKey00/nightly", 403, nil},
		{"/p/" + cKey + "/nosuch", 404, nil},
		{"/p/" + cKey, 404, nil},
	} {
		before := len(spooled(t, dir))
		if w := do(r, "GET", tc.target, ""); w.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.target, w.Code, w.Body, tc.code)
		}
		var got []string
		for _, rec := range spooled(t, dir)[before:] {
			got = append(got, brief(rec))
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s stored\n%s\nwant\n%s", tc.target, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
	want := map[string]int{RejectBadCheckin: 2, RejectBadExitCode: 1, RejectWrongKey: 1, RejectUnknownJob: 1, RejectBadPath: 1}
	if fmt.Sprint(rej.n) != fmt.Sprint(want) {
		t.Errorf("refused %v, want %v", rej.n, want)
	}
}

// Sentry's HTTP check-ins: in_progress, then ok or error, paired by
// check_in_id; a wrong key 401, an unknown monitor 404.
func TestSentryCronURLs(t *testing.T) {
	now := t0
	var rej rejects
	dir := t.TempDir()
	r := dialectReceiver(t, dir, &rej, &now)
	const id = "4a0d4c3b2a1f4e5d8c7b6a5f4e3d2c1b"
	base := "/api/42/cron/nightly/" + sKey + "/"
	for _, tc := range []struct {
		target string
		code   int
		want   string
	}{
		{base + "?status=in_progress&check_in_id=" + id, 202, "backup start rid=4a0d4c3b-2a1f-4e5d-8c7b-6a5f4e3d2c1b"},
		{base + "?status=error&check_in_id=" + id, 202, "backup end failure rid=4a0d4c3b-2a1f-4e5d-8c7b-6a5f4e3d2c1b"},
		{base + "?status=ok", 202, "backup end success"},
		{base + "?status=done", 400, ""},
		{"/api/42/cron/nightly/ffffffffffffffffffffffffffffffff/?status=ok", 401, ""},
		{"/api/42/cron/nosuch/" + sKey + "/?status=ok", 404, ""},
		{"/api/x/cron/nightly/" + sKey + "/?status=ok", 404, ""},
	} {
		before := len(spooled(t, dir))
		if w := do(r, "GET", tc.target, ""); w.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.target, w.Code, w.Body, tc.code)
		}
		got := spooled(t, dir)[before:]
		if tc.want == "" && len(got) != 0 || tc.want != "" && (len(got) != 1 || brief(got[0]) != tc.want) {
			t.Errorf("%s stored %+v, want %q", tc.target, got, tc.want)
		}
	}
	want := map[string]int{RejectBadCheckin: 1, RejectWrongKey: 1, RejectUnknownJob: 1, RejectBadPath: 1}
	if fmt.Sprint(rej.n) != fmt.Sprint(want) {
		t.Errorf("refused %v, want %v", rej.n, want)
	}
}

func envelope(items ...string) string {
	var b strings.Builder
	b.WriteString(`{"event_id":"9ec79c33ec9942ab8353589fcb2e04dc","sent_at":"2026-12-01T10:00:00Z"}` + "\n")
	for _, it := range items {
		fmt.Fprintf(&b, "{\"type\":\"check_in\",\"length\":%d}\n%s\n", len(it), it)
	}
	return b.String()
}

// Envelopes: check_in items stored, a duration making the run's start,
// other items skipped, gzip read; a monitor_config of an unknown monitor
// creates nothing.
func TestSentryEnvelopes(t *testing.T) {
	now := t0
	var rej rejects
	dir := t.TempDir()
	r := dialectReceiver(t, dir, &rej, &now)
	auth := []string{"X-Sentry-Auth", "Sentry sentry_key=" + sKey + ", sentry_version=7, sentry_client=sentry.go/0.46.2"}
	const id = "4a0d4c3b2a1f4e5d8c7b6a5f4e3d2c1b"
	const rid = "4a0d4c3b-2a1f-4e5d-8c7b-6a5f4e3d2c1b"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(envelope(`{"check_in_id":"` + id + `","monitor_slug":"nightly","status":"ok","duration":30}`)))
	zw.Close()
	for _, tc := range []struct {
		name, body string
		hdr        []string
		code       int
		want       []string
	}{
		{"in progress", envelope(`{"check_in_id":"` + id + `","monitor_slug":"nightly","status":"in_progress"}`), auth, 200,
			[]string{"backup start rid=" + rid}},
		{"ok of a start seen", envelope(`{"check_in_id":"` + id + `","monitor_slug":"nightly","status":"ok","duration":30}`), auth, 200,
			[]string{"backup end success rid=" + rid}},
		{"error with a duration, its start unseen", `{}` + "\n" + `{"type":"event"}` + "\n{\"message\":\"x\"}\n" +
			`{"type":"check_in"}` + "\n" + `{"check_in_id":"0000000000000000000000000000000a","monitor_slug":"db-backup","status":"error","duration":90.5}` + "\n", auth, 200,
			[]string{"backup start rid=00000000-0000-0000-0000-00000000000a at=-1m30.5s", "backup end failure rid=00000000-0000-0000-0000-00000000000a"}},
		{"gzipped, the same end again", gz.String(), append([]string{"Content-Encoding", "gzip"}, auth...), 200, nil},
		{"key in the query", envelope(`{"monitor_slug":"sync","status":"ok"}`), nil, 200, []string{"sync end success"}},
		{"wrong key", envelope(`{"monitor_slug":"sync","status":"ok"}`), []string{"X-Sentry-Auth", "Sentry sentry_key=ffffffffffffffffffffffffffffffff"}, 401, nil},
		{"unknown monitor with a config", envelope(`{"monitor_slug":"reports","status":"in_progress","monitor_config":{"schedule":{"type":"crontab","value":"0 3 * * *"},"checkin_margin":5,"max_runtime":30,"timezone":"Europe/Vienna"}}`), auth, 404, nil},
		{"one unknown of two: none stored", envelope(`{"monitor_slug":"sync","status":"ok"}`, `{"monitor_slug":"nosuch","status":"ok"}`), auth, 404, nil},
		{"bad status", envelope(`{"monitor_slug":"sync","status":"fine"}`), auth, 400, nil},
		{"not an envelope", "hello", auth, 400, nil},
		{"length past the end", `{}` + "\n" + `{"type":"check_in","length":500}` + "\n{}", auth, 400, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(spooled(t, dir))
			target := "/api/42/envelope/"
			if tc.hdr == nil {
				target += "?sentry_key=" + sKey
			}
			w := do(r, "POST", target, tc.body, tc.hdr...)
			if w.Code != tc.code {
				t.Errorf("%d %s, want %d", w.Code, w.Body, tc.code)
			}
			var got []string
			for _, rec := range spooled(t, dir)[before:] {
				got = append(got, brief(rec))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	if w := do(r, "GET", "/api/42/envelope/?sentry_key="+sKey, ""); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET of an envelope: %d", w.Code)
	}
	// The monitor_config of the unknown monitor is proposed, not watched.
	got := r.Proposals()
	if len(got) != 1 || got[0].Identifier != "reports" || got[0].Created ||
		got[0].Entry != "- name: reports\n  schedule: \"0 3 * * *\"\n  grace: 5m\n  timeout: 30m\n  timezone: Europe/Vienna\n  aliases: [reports]\n" {
		t.Errorf("proposals %+v", got)
	}
}

// A monitor_config reads as the jobs: entry it describes.
func TestProposedJob(t *testing.T) {
	for _, tc := range []struct{ slug, cfg, want string }{
		{"reports", `{"schedule":{"type":"crontab","value":"0 3 * * *"},"checkin_margin":5,"max_runtime":30,"timezone":"Europe/Vienna"}`,
			"- name: reports\n  schedule: \"0 3 * * *\"\n  grace: 5m\n  timeout: 30m\n  timezone: Europe/Vienna\n  aliases: [reports]\n"},
		{"9-cleanup", `{"schedule":{"type":"interval","value":2,"unit":"hour"}}`,
			"- name: sentry_9-cleanup\n  every: 2h\n  aliases: [9-cleanup]\n"},
		{"x", `{"schedule":{"type":"interval","value":0,"unit":"hour"}}`, "error"},
		{"x", `{"schedule":{"type":"crontab","value":"0 3 * * *\"\n- evil: 1"}}`, "error"},
		{"Bad Slug", `{"schedule":{"type":"interval","value":1,"unit":"day"}}`, "error"},
	} {
		var mc monitorConfig
		if err := json.Unmarshal([]byte(tc.cfg), &mc); err != nil {
			t.Fatal(err)
		}
		got, err := proposedJob(tc.slug, mc)
		if err != nil {
			got = "error"
		}
		if got != tc.want {
			t.Errorf("%s %s:\n%s\nwant\n%s", tc.slug, tc.cfg, got, tc.want)
		}
	}
}

// Fuzzing the path reader: never a panic, a ping always of a job known,
// a refusal always with a reason.
func FuzzPingPath(f *testing.F) {
	cfg, err := config.Parse(strings.NewReader(dialCfg))
	if err != nil {
		f.Fatal(err)
	}
	c := ConfigOf(cfg)
	rt := routesOf(c.Accepted(cfg.Jobs), cfg.Jobs, c)
	for _, s := range []string{hcUUID, hcUUID + "/start", hcKey + "/db-backup/3", "a/b/c/d", "", "/", "backup//", hcKey + "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rest string) {
		p, ref := rt.pingPath(rest)
		if ref == nil && rt.ids[p.job] != p.job {
			t.Fatalf("%q: ping of unknown job %q", rest, p.job)
		}
		if ref != nil && ref.reason == "" {
			t.Fatalf("%q: refusal without reason", rest)
		}
		_ = rt.rootPing("/" + rest)
	})
}

// Fuzzing the envelope reader: never a panic, never more items than the
// bound.
func FuzzEnvelope(f *testing.F) {
	f.Add([]byte(envelope(`{"check_in_id":"4a0d4c3b2a1f4e5d8c7b6a5f4e3d2c1b","monitor_slug":"nightly","status":"ok","duration":30}`)))
	f.Add([]byte("{}\n{\"type\":\"check_in\",\"length\":-1}\n"))
	f.Add([]byte("{}\n{\"type\":\"check_in\"}\n{\"monitor_config\":{\"schedule\":{\"type\":\"interval\",\"value\":1,\"unit\":\"day\"}}}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := parseEnvelope(body)
		if err == nil && len(items) > maxEnvelopeItems {
			t.Fatalf("%d items", len(items))
		}
		for _, c := range items {
			if c.Config != nil {
				_, _ = proposedJob(c.Slug, *c.Config)
			}
		}
	})
}
