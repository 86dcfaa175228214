package checkin

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobwatch/jobwatch/internal/ratelog"
	"github.com/jobwatch/jobwatch/model"
)

// Reasons a check-in is refused, the values of the reason label of
// jobwatch_checkins_rejected_total.
const (
	RejectUnknownJob   = "unknown_job"
	RejectBadExitCode  = "bad_exit_code"
	RejectBodyTooLarge = "body_too_large"
	RejectBadRunID     = "bad_rid"
	RejectBadHost      = "bad_host"
	RejectBadPID       = "bad_pid"
	RejectBadReason    = "bad_reason"
	RejectMethod       = "method_not_allowed"
	RejectCrossSite    = "cross_site"
	RejectBadPath      = "bad_path"
	// RejectWrongKey: a key of another monitor's URL (a ping key, a DSN's
	// key, a telemetry key) that checkins.keys does not hold.
	RejectWrongKey = "wrong_key"
	// RejectBadCheckin: a Sentry check-in or envelope that does not read.
	RejectBadCheckin = "bad_checkin"
	// RejectCreateRefused: ?create=1 of a slug not allowed, or past
	// checkins.create.max.
	RejectCreateRefused = "create_refused"
)

// RejectReasons lists every reason, so that each series exists from the
// start.
var RejectReasons = []string{RejectUnknownJob, RejectBadExitCode, RejectBodyTooLarge, RejectBadRunID,
	RejectBadHost, RejectBadPID, RejectBadReason, RejectMethod, RejectCrossSite, RejectBadPath,
	RejectWrongKey, RejectBadCheckin, RejectCreateRefused}

// SkipReasons are the reasons a skip check-in may give (?reason=); they
// become the reason label of jobwatch_job_skips_total, so they are bounded.
var SkipReasons = model.SkipReasons

// Limits of the query parameters.
const (
	maxHost = 255
	maxPID  = 1 << 22
)

var (
	uuidRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	})
	hostRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:-]*$`) })
)

// spoolRecord is one line of the spool: an acknowledged check-in. The format
// is versioned (V) and documented in docs/checkins.md.
type spoolRecord struct {
	V        int       `json:"v"`
	Time     time.Time `json:"time"`
	Job      string    `json:"job"`
	Event    string    `json:"event"`            // start, end, skip or log
	Status   string    `json:"status,omitempty"` // end: success or failure
	ExitCode *int      `json:"exit_code,omitempty"`
	RunID    string    `json:"rid,omitempty"`
	Host     string    `json:"host,omitempty"`
	PID      int       `json:"pid,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Output   string    `json:"output,omitempty"`
}

const spoolVersion = 1

// eventLog is a spool record of Healthchecks' /log: its output, no run.
const eventLog = "log"

// ServeHTTP answers a check-in in any of the shapes it takes (dialects.go):
// jobwatch's and Healthchecks' /ping/..., Sentry's /api/..., Cronitor's
// /p/..., and Healthchecks' at the root with root_paths. A check-in is
// acknowledged only once it is stored.
func (s *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD, POST")
		s.refuse(w, &refusal{http.StatusMethodNotAllowed, RejectMethod, "check-ins take GET or POST"})
		return
	}
	// A check-in changes state. curl, wget and PowerShell send neither
	// header; a browser sends them, and a page on another site must not be
	// able to report a job's success through its visitors' browsers.
	if crossSite(r) {
		s.refuse(w, &refusal{http.StatusForbidden, RejectCrossSite, "cross-site check-ins are refused"})
		return
	}
	rt := s.routes.Load()
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, s.opts.Prefix):
		s.servePing(w, r, rt, path[len(s.opts.Prefix):])
	case strings.HasPrefix(path, sentryPrefix):
		s.serveSentry(w, r, rt, path[len(sentryPrefix):])
	case strings.HasPrefix(path, cronitorPrefix):
		s.serveCronitor(w, r, rt, path[len(cronitorPrefix):])
	case rt.rootPing(path):
		s.servePing(w, r, rt, strings.TrimPrefix(path, "/"))
	default:
		s.refuse(w, badPath)
	}
}

// servePing answers /ping/... (rest, the path after it): jobwatch's
// check-ins and Healthchecks'.
func (s *Receiver) servePing(w http.ResponseWriter, r *http.Request, rt *routes, rest string) {
	p, ref := rt.pingPath(rest)
	created := false
	if ref != nil && p.slug != "" && r.URL.Query().Get("create") == "1" {
		if !s.create(w, p.slug) {
			return
		}
		created = true
		p, ref = s.routes.Load().pingPath(rest)
	}
	if ref == nil {
		var rec spoolRecord
		rec, ref = s.read(w, r, p.job, p.verb)
		if ref == nil {
			saved := s.keep(r.Context(), rec)
			if created && saved {
				// Healthchecks' answer to a ping that created its check.
				w.Header().Set("Ping-Body-Limit", strconv.FormatInt(s.maxBody.Load(), 10))
				w.WriteHeader(http.StatusCreated)
				_, _ = io.WriteString(w, "Created")
				return
			}
			s.answerPing(w, p, saved)
			return
		}
	}
	if p.alias && ref.code == http.StatusBadRequest {
		// Healthchecks' words, which its clients may show.
		ref.msg = "invalid url format"
		if ref.reason == RejectBadRunID {
			ref.msg = "invalid uuid format"
		}
	}
	s.refuse(w, ref)
}

// answerPing answers a ping stored (saved) or not: a Healthchecks
// identifier as Healthchecks does ("OK"), with the body limit its
// clients (runitor) cut their bodies to.
func (s *Receiver) answerPing(w http.ResponseWriter, p ping, saved bool) {
	w.Header().Set("Ping-Body-Limit", strconv.FormatInt(s.maxBody.Load(), 10))
	if !p.alias || !saved {
		acknowledge(w, saved)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "OK")
}

// keep stores rec where the config says (the spool, or store: mysql's
// table) and reports whether it is stored.
func (s *Receiver) keep(ctx context.Context, rec spoolRecord) bool {
	if s.storeErr.Load() != nil {
		s.opts.OnNotSaved(StoreMySQL)
		return false
	}
	if t := s.table.Load(); t != nil {
		if rec.Event == eventLog {
			return true // the table has no place for a log: docs/checkins.md
		}
		// A retry needs no local memory: the table's unique key on
		// (job_name, run_id) makes it a no-op on any replica.
		err := t.Save(ctx, rec)
		s.notSaved(StoreMySQL, rec.Job, err)
		return err == nil
	}
	return s.save(rec)
}

// A refusal is the answer to a check-in that is not saved, counted under
// its reason unless it has none.
type refusal struct {
	code   int
	reason string
	msg    string
}

func (s *Receiver) refuse(w http.ResponseWriter, ref *refusal) {
	if ref.reason != "" {
		s.opts.OnReject(ref.reason)
	}
	http.Error(w, ref.msg, ref.code)
}

// read is the check-in r makes of job: its event from verb, its run id,
// host, pid and skip reason from the query, its output from the body.
func (s *Receiver) read(w http.ResponseWriter, r *http.Request, job, verb string) (spoolRecord, *refusal) {
	rec := spoolRecord{V: spoolVersion, Job: job}
	if ref := readVerb(&rec, verb); ref != nil {
		return spoolRecord{}, ref
	}
	if ref := readQuery(&rec, r); ref != nil {
		return spoolRecord{}, ref
	}
	output, ref := s.readOutput(w, r)
	if ref != nil {
		return spoolRecord{}, ref
	}
	rec.Output = output
	rec.Time = s.opts.Now().UTC()
	return rec, nil
}

// readVerb sets rec's event, and an end's status and exit code, from verb.
func readVerb(rec *spoolRecord, verb string) *refusal {
	switch verb {
	case "":
		rec.Event, rec.Status = "end", "success"
	case "start":
		rec.Event = "start"
	case "fail":
		rec.Event, rec.Status = "end", "failure"
	case "skip":
		rec.Event = "skip"
	case "log":
		// Healthchecks' /log: an output that says nothing of a run.
		rec.Event = eventLog
	default:
		code, err := strconv.Atoi(verb)
		if err != nil || code < 0 || code > 255 || verb != strconv.Itoa(code) {
			return &refusal{http.StatusBadRequest, RejectBadExitCode, "exit code must be 0-255"}
		}
		rec.Event, rec.Status, rec.ExitCode = "end", "success", &code
		if code != 0 {
			rec.Status = "failure"
		}
	}
	return nil
}

// readQuery sets rec's run id, host, pid and skip reason from r's query.
func readQuery(rec *spoolRecord, r *http.Request) *refusal {
	q := r.URL.Query()
	if rid := q.Get("rid"); rid != "" {
		if !uuidRE().MatchString(rid) {
			return &refusal{http.StatusBadRequest, RejectBadRunID, "rid must be a UUID"}
		}
		rec.RunID = strings.ToLower(rid)
	}
	rec.Host = clientHost(r)
	if h := q.Get("host"); h != "" {
		if len(h) > maxHost || !hostRE().MatchString(h) {
			return &refusal{http.StatusBadRequest, RejectBadHost, "host must be a host name"}
		}
		rec.Host = h
	}
	if p := q.Get("pid"); p != "" {
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 0 || pid > maxPID {
			return &refusal{http.StatusBadRequest, RejectBadPID, "pid must be a positive integer"}
		}
		rec.PID = pid
	}
	if reason := q.Get("reason"); reason != "" || rec.Event == "skip" {
		switch {
		case rec.Event != "skip":
			return &refusal{http.StatusBadRequest, RejectBadReason, "reason is for skips only"}
		case reason == "":
			reason = "other"
		case !contains(SkipReasons, reason):
			return &refusal{http.StatusBadRequest, RejectBadReason, "reason must be one of " + strings.Join(SkipReasons, ", ")}
		}
		rec.Reason = reason
	}
	return nil
}

// readOutput is the end of r's body, up to model.OutputExcerpt.
func (s *Receiver) readOutput(w http.ResponseWriter, r *http.Request) (string, *refusal) {
	body, ref := s.readBody(w, r)
	if ref != nil {
		return "", ref
	}
	if len(body) > model.OutputExcerpt {
		body = body[len(body)-model.OutputExcerpt:]
	}
	return string(body), nil
}

// readBody reads r's body, up to max_body, gunzipped when it says it is
// gzipped (as Sentry's SDKs send envelopes): max_body bounds both.
func (s *Receiver) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *refusal) {
	limit := s.maxBody.Load()
	tooLarge := &refusal{http.StatusRequestEntityTooLarge, RejectBodyTooLarge, "body larger than max_body (" + strconv.FormatInt(limit, 10) + " bytes)"}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, tooLarge
		}
		return nil, &refusal{http.StatusBadRequest, "", "reading the body: " + err.Error()}
	}
	switch r.Header.Get("Content-Encoding") {
	case "", "identity":
		return body, nil
	case "gzip":
	default:
		return nil, &refusal{http.StatusUnsupportedMediaType, RejectBadCheckin, "Content-Encoding must be gzip or none"}
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err == nil {
		body, err = io.ReadAll(io.LimitReader(zr, limit+1))
	}
	switch {
	case err != nil:
		return nil, &refusal{http.StatusBadRequest, RejectBadCheckin, "gzipped body does not read"}
	case int64(len(body)) > limit:
		return nil, tooLarge
	}
	return body, nil
}

// save appends rec to the spool and reports whether it is there.
func (s *Receiver) save(rec spoolRecord) bool {
	// A retry of a check-in already acknowledged (same run id and event)
	// is acknowledged again and applied once.
	key := dedupKey{job: rec.Job, rid: rec.RunID, event: rec.Event}
	if rec.RunID != "" {
		if earlier := s.dedup.claim(key); earlier != nil {
			<-earlier.done
			return earlier.ok
		}
	}
	line, err := json.Marshal(rec)
	if err == nil {
		err = s.spool.Append(append(line, '\n'))
	}
	if rec.RunID != "" {
		s.dedup.settle(key, err == nil)
	}
	s.notSaved(StoreSpool, rec.Job, err)
	return err == nil
}

// notSaved counts and logs a check-in that store could not keep (err
// not nil), summarised per job while the disk or the database is down.
func (s *Receiver) notSaved(store, job string, err error) {
	if err == nil {
		return
	}
	s.opts.OnNotSaved(store)
	s.opts.Logger.Error("check-in not saved", ratelog.Per("job"), "job", job, "store", store, "err", err)
}

// acknowledge answers a check-in saved, or not saved and to be retried.
func acknowledge(w http.ResponseWriter, saved bool) {
	if !saved {
		http.Error(w, "check-in not saved; retry", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "OK\n")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// crossSite reports a request a browser made on behalf of another site. An
// Origin of "null" (a sandboxed frame, a redirect across sites, a file: page)
// is as foreign as any other.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return true
	}
	if o := r.Header.Get("Origin"); o != "" {
		host := strings.TrimPrefix(strings.TrimPrefix(o, "https://"), "http://")
		return host != r.Host
	}
	return false
}

// clientHost is the address the check-in came from: the run's host unless
// the check-in names one.
func clientHost(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return ""
	}
	return h
}

// dedupKey identifies a check-in for retries.
type dedupKey struct{ job, rid, event string }

// dedupMemory bounds the check-ins remembered for retries.
const dedupMemory = 1 << 16

// recent remembers the latest check-ins with a run id, oldest forgotten
// first, so that a retry is acknowledged without being applied again.
type recent struct {
	mu    sync.Mutex
	set   map[dedupKey]*claim
	order []dedupKey
	next  int
}

// claim is a check-in being saved (done open) or saved (ok).
type claim struct {
	done chan struct{}
	ok   bool
}

func newRecent() *recent {
	return &recent{set: make(map[dedupKey]*claim)}
}

// claim returns nil when k is new, and then the caller must call settle;
// else the earlier check-in's claim, to wait for.
func (r *recent) claim(k dedupKey) *claim {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.set[k]; c != nil {
		return c
	}
	r.set[k] = &claim{done: make(chan struct{})}
	return nil
}

// settle records whether k's check-in was saved; one that was not is
// forgotten, so its retry is saved afresh.
func (r *recent) settle(k dedupKey, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.set[k]
	c.ok = ok
	close(c.done)
	if !ok {
		delete(r.set, k)
		return
	}
	r.remember(k)
}

// remember adds k to the order of forgetting.
func (r *recent) remember(k dedupKey) {
	if len(r.order) < dedupMemory {
		r.order = append(r.order, k)
		return
	}
	delete(r.set, r.order[r.next])
	r.order[r.next] = k
	r.next = (r.next + 1) % dedupMemory
}

// saved marks k as a check-in saved earlier (read back from the spool).
func (r *recent) saved(k dedupKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set[k] != nil {
		return
	}
	c := &claim{done: make(chan struct{}), ok: true}
	close(c.done)
	r.set[k] = c
	r.remember(k)
}

// has reports whether k was saved, or is being saved.
func (r *recent) has(k dedupKey) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.set[k] != nil
}
