package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/jobwatch/jobwatch/internal/duration"
	"github.com/jobwatch/jobwatch/model"
)

// The admin API (docs/web.md): POST /api/v1/jobs/NAME/pause and
// /api/v1/jobs/NAME/resume, served only with --web.enable-admin-api.
const (
	PausePath  = "/api/v1/jobs/{name}/pause"
	ResumePath = "/api/v1/jobs/{name}/resume"
)

// AdminFlag is the flag that turns the admin API on; a refusal names it.
const AdminFlag = "--web.enable-admin-api"

// UntilHealthy is the --until (until=) that ends a pause at the job's next
// success.
const UntilHealthy = "healthy"

// maxReason bounds a pause's reason, which is logged, saved and shown.
const maxReason = 200

// Pauser pauses and resumes jobs; *exporter.Exporter is one.
type Pauser interface {
	Pause(job string, p model.Pause) (model.Pause, error)
	Resume(job string) error
}

// PauseAnswer is the pause API's answer.
type PauseAnswer struct {
	Job          string     `json:"job"`
	Since        time.Time  `json:"since"`
	Until        *time.Time `json:"until"`
	UntilHealthy bool       `json:"until_healthy"`
	Reason       string     `json:"reason"`
}

// ParseUntil reads a pause's end as jobwatch pause --until takes it: ""
// (until resumed), "healthy" (until the next success), a duration from now
// ("2h", "1d"), or a time (RFC 3339: "2026-12-06T14:00:00Z" or with an
// offset). The end must be after now.
func ParseUntil(s string, now time.Time) (until time.Time, healthy bool, err error) {
	switch s = strings.TrimSpace(s); {
	case s == "":
		return time.Time{}, false, nil
	case s == UntilHealthy:
		return time.Time{}, true, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		if !t.After(now) {
			return time.Time{}, false, fmt.Errorf("until %s: that is not in the future", s)
		}
		return t, false, nil
	}
	d, err := duration.Parse(s)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("until %q: want %s, a duration like 2h or 1d, or a time like 2026-12-06T14:00:00Z", s, UntilHealthy)
	}
	if d <= 0 {
		return time.Time{}, false, fmt.Errorf("until %q: a duration must be positive", s)
	}
	return now.Add(d), false, nil
}

// checkReason refuses a reason too long or with control characters.
func checkReason(s string) error {
	if len(s) > maxReason {
		return fmt.Errorf("reason: at most %d bytes, got %d", maxReason, len(s))
	}
	if strings.ContainsFunc(s, unicode.IsControl) {
		return errors.New("reason: no control characters")
	}
	return nil
}

// AdminHandler serves the admin API. Disabled, it refuses every request,
// naming the flag. Enabled, it takes POST only (form values until and
// reason), refuses requests a browser marks cross-origin as /-/reload
// does, and logs every change it makes, with who asked (the basic auth
// user, if any, and the address).
func AdminHandler(p Pauser, enabled bool, now func() time.Time, logger *slog.Logger) http.Handler {
	if !enabled {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "the admin API is disabled: start jobwatch with "+AdminFlag+" to pause and resume jobs", http.StatusForbidden)
		})
	}
	a := &admin{p: p, now: now, logger: logger}
	mux := http.NewServeMux()
	mux.HandleFunc(PausePath, a.pause)
	mux.HandleFunc(ResumePath, a.resume)
	return http.NewCrossOriginProtection().Handler(mux)
}

type admin struct {
	p      Pauser
	now    func() time.Time
	logger *slog.Logger
}

// post refuses what is not a POST.
func post(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return false
	}
	return true
}

func (a *admin) pause(w http.ResponseWriter, r *http.Request) {
	if !post(w, r) {
		return
	}
	job := r.PathValue("name")
	until, healthy, err := ParseUntil(r.FormValue("until"), a.now())
	if err == nil {
		err = checkReason(r.FormValue("reason"))
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, err := a.p.Pause(job, model.Pause{Until: until, UntilHealthy: healthy, Reason: r.FormValue("reason")})
	if err != nil {
		a.refuse(w, r, "pause", job, err)
		return
	}
	a.logger.Info("admin API: job paused", append(who(r), "job", job, "until", p.Until, "until_healthy", p.UntilHealthy, "reason", p.Reason)...)
	ans := PauseAnswer{Job: job, Since: p.From, UntilHealthy: p.UntilHealthy, Reason: p.Reason}
	if !p.Until.IsZero() {
		ans.Until = &p.Until
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ans)
}

func (a *admin) resume(w http.ResponseWriter, r *http.Request) {
	if !post(w, r) {
		return
	}
	job := r.PathValue("name")
	if err := a.p.Resume(job); err != nil {
		a.refuse(w, r, "resume", job, err)
		return
	}
	a.logger.Info("admin API: job resumed", append(who(r), "job", job)...)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"job": job})
}

// refuse answers a pause or resume that failed.
func (a *admin) refuse(w http.ResponseWriter, r *http.Request, what, job string, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, model.ErrUnknownJob):
		code = http.StatusNotFound
	case errors.Is(err, model.ErrNotPaused):
		code = http.StatusConflict
	default: // the state could not be saved
		a.logger.Error("admin API: "+what+" not saved", append(who(r), "job", job, "err", err)...)
	}
	http.Error(w, err.Error(), code)
}

// who names who asked: the address and, with basic auth, the user (never
// the password).
func who(r *http.Request) []any {
	attrs := []any{"remote", r.RemoteAddr}
	if user, _, ok := r.BasicAuth(); ok {
		attrs = append(attrs, "user", user)
	}
	return attrs
}
