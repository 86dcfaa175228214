package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// Viewer gives the state to show: the same views the collector renders.
type Viewer interface {
	View() ([]model.JobView, []model.SourceView)
}

// Handler serves the status pages and the JSON API:
//
//	/status, /status/job/NAME      HTML for people
//	/api/v1/jobs, /api/v1/jobs/NAME JSON (docs/status.md)
type Handler struct {
	View Viewer
	Now  func() time.Time
	Page PageOptions
	// Output reads the outputs sources keep (check-ins'); nil: none.
	Output OutputFunc
	// Proposals are jobs for the config file that check-ins made or
	// proposed (docs/checkins.md); nil: none.
	Proposals func() []Proposal
}

// Proposal is a job for the config file, shown on the index page: a
// jobs: entry (Entry), watched already when Created.
type Proposal struct {
	Identifier string `json:"identifier"`
	Origin     string `json:"origin"`
	Entry      string `json:"entry"`
	Created    bool   `json:"created"`
}

func (h *Handler) report() ([]model.JobView, Report) {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	jobs, srcs := h.View.View()
	return jobs, Build(jobs, srcs, now())
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// Page.Prefix is for links only: a reverse proxy under
	// --web.external-url strips it before jobwatch sees the request.
	path := r.URL.Path
	views, rep := h.report()
	var buf bytes.Buffer
	switch {
	case path == "/status" || path == "/status/" || path == "/":
		// ?state=stale lists the stale jobs only: the counts at the top
		// link there.
		state := r.URL.Query().Get("state")
		if state != "" && !KnownState(state) {
			http.Error(w, fmt.Sprintf("unknown state %q: one of %s", state, strings.Join(States, ", ")), http.StatusBadRequest)
			return
		}
		// ?label=team=payments (repeatable) lists that team's jobs.
		labels, err := ParseLabelMatches(r.URL.Query()["label"])
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if h.Proposals != nil {
			rep.Proposals = h.Proposals()
		}
		if err := WriteIndex(&buf, rep, h.Page, state, labels...); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeBody(w, "text/html; charset=utf-8", buf.Bytes())
	case strings.HasPrefix(path, "/status/job/"):
		name := strings.TrimPrefix(path, "/status/job/")
		i := find(rep, name)
		if i < 0 {
			http.Error(w, "no such job", http.StatusNotFound)
			return
		}
		from, _ := ChartWindow(rep.Jobs[i], rep.GeneratedAt)
		slots := ExpectedSlots(&views[i], from, rep.GeneratedAt)
		withOutputs(&rep.Jobs[i], h.Output, 0)
		if err := WriteJob(&buf, rep, &rep.Jobs[i], slots, h.Page); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeBody(w, "text/html; charset=utf-8", buf.Bytes())
	case path == "/api/v1/jobs":
		page, err := listPage(rep, r.URL.Query(), h.Output)
		if err != nil {
			http.Error(w, `{"error":"`+err.Error()+`"}`, http.StatusBadRequest)
			return
		}
		writeJSON(w, page)
	case strings.HasPrefix(path, "/api/v1/jobs/"):
		i := find(rep, strings.TrimPrefix(path, "/api/v1/jobs/"))
		if i < 0 {
			http.Error(w, `{"error":"no such job"}`, http.StatusNotFound)
			return
		}
		withOutputs(&rep.Jobs[i], h.Output, 0)
		writeJSON(w, rep.Jobs[i])
	default:
		http.NotFound(w, r)
	}
}

// find returns the index of the job named name (views and report jobs are
// in the same order), or -1.
func find(rep Report, name string) int {
	for i := range rep.Jobs {
		if rep.Jobs[i].Name == name {
			return i
		}
	}
	return -1
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeBody(w, "application/json", append(b, '\n'))
}

func writeBody(w http.ResponseWriter, typ string, b []byte) {
	w.Header().Set("Content-Type", typ)
	w.Header().Set("Cache-Control", "no-store")
	SetPageHeaders(w.Header())
	_, _ = w.Write(b)
}

// SetPageHeaders sets the headers every page jobwatch serves carries: a
// Content-Security-Policy under which no script of any origin runs (a job's
// output is shown on the status page) and nosniff, so that no browser reads
// a body as another type than the one sent.
func SetPageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
}

// WithPageHeaders serves next with SetPageHeaders' headers: the landing
// page, which exporter-toolkit renders, carries them as the status page does.
func WithPageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetPageHeaders(w.Header())
		next.ServeHTTP(w, r)
	})
}
