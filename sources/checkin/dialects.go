package checkin

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// The paths of the other monitors' check-ins, besides Healthchecks' under
// /ping/ (routes.go).
const (
	// sentryPrefix: Sentry Crons' HTTP check-ins,
	// /api/<project>/cron/<monitor-slug>/<key>/?status=..., and the SDKs'
	// envelopes, POST /api/<project>/envelope/ (envelope.go).
	sentryPrefix = "/api/"
	// cronitorPrefix: Cronitor's telemetry, /p/<key>/<monitor-key>?state=...
	cronitorPrefix = "/p/"
)

// maxRunDuration bounds a duration a check-in reports (Sentry's
// duration, Cronitor's): a run's start is put that long before its end.
const maxRunDuration = 366 * 24 * time.Hour

// A run report is what another monitor's check-in says: a run starts,
// or ends (ok or not, with an exit code, a duration, an output), under
// its run id (a UUID, or any string: series), on a host.
type runReport struct {
	job    string
	start  bool
	ok     bool
	exit   *int
	dur    time.Duration // of an end, when given
	runKey string        // the monitor's id of the run, "" for none
	host   string
	output string
}

// records are the spool records of rep, stamped now: an end that gives
// its duration and whose start this receiver has not seen is preceded by
// that start, so the run has the duration the check-in says.
func (s *Receiver) records(rep runReport, r *http.Request) []spoolRecord {
	now := s.opts.Now().UTC()
	rec := spoolRecord{V: spoolVersion, Job: rep.job, Time: now, Host: clientHost(r), Output: rep.output}
	if rep.host != "" && len(rep.host) <= maxHost && hostRE().MatchString(rep.host) {
		rec.Host = rep.host
	}
	if rep.runKey != "" {
		rec.RunID = runID(rep.job, rep.runKey)
	}
	if rep.start {
		rec.Event = "start"
		return []spoolRecord{rec}
	}
	rec.Event, rec.Status, rec.ExitCode = "end", "success", rep.exit
	if !rep.ok || rep.exit != nil && *rep.exit != 0 {
		rec.Status = "failure"
	}
	if rep.dur <= 0 || s.startSeen(rec) {
		return []spoolRecord{rec}
	}
	if rec.RunID == "" {
		// The end pairs with its start by a run id of their own.
		rec.RunID = runID(rep.job, now.Format(time.RFC3339Nano))
	}
	start := rec
	start.Event, start.Status, start.ExitCode, start.Output = "start", "", nil, ""
	start.Time = now.Add(-rep.dur)
	return []spoolRecord{start, rec}
}

// startSeen reports whether the start of rec's run was acknowledged here.
func (s *Receiver) startSeen(rec spoolRecord) bool {
	return rec.RunID != "" && s.dedup.has(dedupKey{job: rec.Job, rid: rec.RunID, event: "start"})
}

// runID is the run id of a monitor's key of a run: the key itself when it
// is a UUID (with or without dashes, as Sentry's check_in_id), else a UUID
// made of it and the job (as Cronitor's series), the same for every
// check-in of the run.
func runID(job, key string) string {
	k := strings.ToLower(key)
	if len(k) == 32 && strings.Trim(k, "0123456789abcdef") == "" {
		k = k[:8] + "-" + k[8:12] + "-" + k[12:16] + "-" + k[16:20] + "-" + k[20:]
	}
	if uuidRE().MatchString(k) {
		return k
	}
	sum := sha1.Sum([]byte(job + "\x00" + key))
	h := hex.EncodeToString(sum[:16])
	return h[:8] + "-" + h[8:12] + "-5" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

// keepAll stores recs in order and reports whether all are stored.
func (s *Receiver) keepAll(ctx context.Context, recs []spoolRecord) bool {
	for _, rec := range recs {
		if !s.keep(ctx, rec) {
			return false
		}
	}
	return true
}

// parseDuration reads a duration in seconds (Sentry's, Cronitor's).
func parseDuration(v string) (time.Duration, bool) {
	if v == "" {
		return 0, true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsNaN(f) || f > maxRunDuration.Seconds() {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

// serveCronitor answers Cronitor's telemetry, rest being the path after
// /p/: <key>/<monitor-key>, with state run, complete, fail or ok (none:
// a heartbeat, a success), status_code the exit code, duration in
// seconds, series the run's id, host, and message (or the body) the
// output.
func (s *Receiver) serveCronitor(w http.ResponseWriter, r *http.Request, rt *routes, rest string) {
	key, monitor, ok := strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	if !ok || key == "" || monitor == "" || strings.Contains(monitor, "/") {
		s.refuse(w, &refusal{http.StatusNotFound, RejectBadPath, "not a Cronitor URL: want /p/<key>/<monitor-key>"})
		return
	}
	if !rt.cronitorKeys[key] {
		s.refuse(w, &refusal{http.StatusForbidden, RejectWrongKey, "unknown telemetry key"})
		return
	}
	job, known := rt.ids[monitor]
	if !known {
		s.refuse(w, &refusal{http.StatusNotFound, RejectUnknownJob, "unknown monitor"})
		return
	}
	rep, ref := cronitorReport(job, r)
	if ref == nil {
		rep.output, ref = s.readOutput(w, r)
		if m := r.URL.Query().Get("message"); m != "" && rep.output == "" {
			rep.output = truncateOutput(m)
		}
	}
	if ref != nil {
		s.refuse(w, ref)
		return
	}
	acknowledge(w, s.keepAll(r.Context(), s.records(rep, r)))
}

// cronitorReport reads a Cronitor ping's query.
func cronitorReport(job string, r *http.Request) (runReport, *refusal) {
	q := r.URL.Query()
	rep := runReport{job: job, runKey: q.Get("series"), host: q.Get("host")}
	switch q.Get("state") {
	case "run":
		rep.start = true
	case "", "complete", "ok":
		rep.ok = true
	case "fail":
	default:
		return rep, &refusal{http.StatusBadRequest, RejectBadCheckin, "state must be run, complete, fail or ok"}
	}
	if c := q.Get("status_code"); c != "" {
		code, err := strconv.Atoi(c)
		if err != nil || code < 0 || code > 255 {
			return rep, &refusal{http.StatusBadRequest, RejectBadExitCode, "status_code must be 0-255"}
		}
		rep.exit = &code
	}
	var ok bool
	if rep.dur, ok = parseDuration(q.Get("duration")); !ok {
		return rep, &refusal{http.StatusBadRequest, RejectBadCheckin, "duration must be seconds"}
	}
	if len(rep.runKey) > 256 {
		return rep, &refusal{http.StatusBadRequest, RejectBadRunID, "series too long"}
	}
	return rep, nil
}

// serveSentry answers Sentry's check-ins, rest being the path after /api/:
// <project>/cron/<monitor-slug>/<key>/ (HTTP check-ins) or
// <project>/envelope/ (the SDKs').
func (s *Receiver) serveSentry(w http.ResponseWriter, r *http.Request, rt *routes, rest string) {
	seg := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	if len(seg) < 2 || !isProject(seg[0]) {
		s.refuse(w, &refusal{http.StatusNotFound, RejectBadPath, "not a Sentry URL: want /api/<project>/cron/<monitor-slug>/<key>/ or /api/<project>/envelope/"})
		return
	}
	switch {
	case seg[1] == "cron" && len(seg) == 4:
		s.serveSentryCron(w, r, rt, seg[2], seg[3])
	case seg[1] == "envelope" && len(seg) == 2:
		s.serveEnvelope(w, r, rt)
	default:
		s.refuse(w, &refusal{http.StatusNotFound, RejectBadPath, "not a Sentry URL: want /api/<project>/cron/<monitor-slug>/<key>/ or /api/<project>/envelope/"})
	}
}

// isProject reports whether s is a Sentry project id (digits).
func isProject(s string) bool { return s != "" && len(s) <= 20 && strings.Trim(s, "0123456789") == "" }

// serveSentryCron answers an HTTP check-in: ?status=in_progress, ok or
// error, with check_in_id pairing an end with its start.
func (s *Receiver) serveSentryCron(w http.ResponseWriter, r *http.Request, rt *routes, slug, key string) {
	if !rt.sentryKeys[key] {
		s.refuse(w, &refusal{http.StatusUnauthorized, RejectWrongKey, "unknown public key"})
		return
	}
	q := r.URL.Query()
	c := sentryCheckIn{ID: q.Get("check_in_id"), Slug: slug, Status: q.Get("status")}
	rep, ref := c.report(rt)
	if ref == nil {
		rep.output, ref = s.readOutput(w, r)
	}
	if ref != nil {
		s.refuse(w, ref)
		return
	}
	if !s.keepAll(r.Context(), s.records(rep, r)) {
		acknowledge(w, false)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// sentryCheckIn is a check_in item's payload (develop.sentry.dev/sdk/
// telemetry/check-ins), what jobwatch reads of it.
type sentryCheckIn struct {
	ID       string         `json:"check_in_id"`
	Slug     string         `json:"monitor_slug"`
	Status   string         `json:"status"`
	Duration *float64       `json:"duration"`
	Config   *monitorConfig `json:"monitor_config"`
}

// report is what c says of its run; rt resolves its monitor slug.
func (c sentryCheckIn) report(rt *routes) (runReport, *refusal) {
	job, known := rt.ids[c.Slug]
	if !known {
		return runReport{}, &refusal{http.StatusNotFound, RejectUnknownJob, "unknown monitor"}
	}
	rep := runReport{job: job, runKey: c.ID}
	if len(c.ID) > 64 {
		return rep, &refusal{http.StatusBadRequest, RejectBadRunID, "check_in_id too long"}
	}
	switch c.Status {
	case "in_progress":
		rep.start = true
	case "ok":
		rep.ok = true
	case "error":
	default:
		return rep, &refusal{http.StatusBadRequest, RejectBadCheckin, "status must be in_progress, ok or error"}
	}
	if c.Duration != nil {
		d, ok := parseDuration(strconv.FormatFloat(*c.Duration, 'f', -1, 64))
		if !ok {
			return rep, &refusal{http.StatusBadRequest, RejectBadCheckin, "duration must be seconds"}
		}
		rep.dur = d
	}
	return rep, nil
}

// truncateOutput keeps the end of an output, as readOutput does.
func truncateOutput(s string) string {
	if len(s) > model.OutputExcerpt {
		return s[len(s)-model.OutputExcerpt:]
	}
	return s
}
