package checkin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/internal/jobname"
	"github.com/jobwatch/jobwatch/internal/ratelog"
)

// maxEnvelopeItems bounds the items of an envelope read.
const maxEnvelopeItems = 100

// envelopeItem is an envelope item's header.
type envelopeItem struct {
	Type   string `json:"type"`
	Length *int   `json:"length"`
}

// parseEnvelope reads the check_in items of a Sentry envelope
// (develop.sentry.dev/sdk/data-model/envelopes): a header line, then
// items, each a header line and a payload of its length, or up to the
// next newline when it has none. Other items (events, sessions) are
// skipped.
func parseEnvelope(body []byte) ([]sentryCheckIn, error) {
	head, rest, _ := bytes.Cut(body, []byte("\n"))
	if !json.Valid(head) {
		return nil, errors.New("envelope header is not JSON")
	}
	var out []sentryCheckIn
	for n := 0; len(bytes.TrimSpace(rest)) > 0; n++ {
		if n == maxEnvelopeItems {
			return nil, fmt.Errorf("more than %d items", maxEnvelopeItems)
		}
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		var item envelopeItem
		if err := json.Unmarshal(line, &item); err != nil {
			return nil, fmt.Errorf("item %d header: %w", n, err)
		}
		var payload []byte
		if item.Length != nil {
			if *item.Length < 0 || *item.Length > len(rest) {
				return nil, fmt.Errorf("item %d: length %d past the end", n, *item.Length)
			}
			payload, rest = rest[:*item.Length], rest[*item.Length:]
			rest = bytes.TrimPrefix(rest, []byte("\n"))
		} else {
			payload, rest, _ = bytes.Cut(rest, []byte("\n"))
		}
		if item.Type != "check_in" {
			continue
		}
		var c sentryCheckIn
		if err := json.Unmarshal(payload, &c); err != nil {
			return nil, fmt.Errorf("item %d check_in: %w", n, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// sentryKey is the public key an envelope is sent with: X-Sentry-Auth's
// sentry_key (the SDKs'), or the sentry_key query parameter.
func sentryKey(r *http.Request) string {
	auth := r.Header.Get("X-Sentry-Auth")
	auth = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(auth), "Sentry"))
	for _, kv := range strings.Split(auth, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == "sentry_key" {
			return v
		}
	}
	return r.URL.Query().Get("sentry_key")
}

// serveEnvelope answers an SDK's envelope: each check_in of it is stored,
// or none is when one is refused. A monitor_config never creates a job: a
// check-in of a monitor no job has is refused, and its config logged as a
// proposed job to add to the file.
func (s *Receiver) serveEnvelope(w http.ResponseWriter, r *http.Request, rt *routes) {
	if r.Method != http.MethodPost {
		s.refuse(w, &refusal{http.StatusMethodNotAllowed, RejectMethod, "envelopes are POSTed"})
		return
	}
	if !rt.sentryKeys[sentryKey(r)] {
		s.refuse(w, &refusal{http.StatusUnauthorized, RejectWrongKey, "unknown public key"})
		return
	}
	body, ref := s.readBody(w, r)
	if ref != nil {
		s.refuse(w, ref)
		return
	}
	checkIns, err := parseEnvelope(body)
	if err != nil {
		s.refuse(w, &refusal{http.StatusBadRequest, RejectBadCheckin, "envelope: " + err.Error()})
		return
	}
	var recs []spoolRecord
	for _, c := range checkIns {
		rep, ref := c.report(rt)
		if ref != nil {
			if ref.reason == RejectUnknownJob && c.Config != nil {
				s.propose(c)
			}
			s.refuse(w, ref)
			return
		}
		recs = append(recs, s.records(rep, r)...)
	}
	if !s.keepAll(r.Context(), recs) {
		acknowledge(w, false)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}

// monitorConfig is a check-in's monitor_config: the monitor Sentry would
// create or update.
type monitorConfig struct {
	Schedule struct {
		Type  string          `json:"type"` // crontab or interval
		Value json.RawMessage `json:"value"`
		Unit  string          `json:"unit"`
	} `json:"schedule"`
	Margin     *float64 `json:"checkin_margin"` // minutes
	MaxRuntime *float64 `json:"max_runtime"`    // minutes
	Timezone   string   `json:"timezone"`
}

// propose logs the job c's monitor_config describes, as jobwatch discover
// prints one, for the file: a check-in never creates a live job.
func (s *Receiver) propose(c sentryCheckIn) {
	job, err := proposedJob(c.Slug, *c.Config)
	if err != nil {
		s.opts.Logger.Warn("Sentry monitor_config of an unknown monitor not read", ratelog.Per("monitor"), "monitor", c.Slug, "err", err)
		return
	}
	s.opts.Logger.Info("Sentry check-in of a monitor no job has: a job for jobwatch.yml", ratelog.Per("monitor"),
		"monitor", c.Slug, "proposed_job", job)
	s.proposed.add(c.Slug, job)
}

// intervalUnits are Sentry's interval units as jobwatch's durations.
var intervalUnits = map[string]string{"minute": "m", "hour": "h", "day": "d", "week": "w", "month": "d", "year": "y"}

// proposedJob is the jobs: entry of a Sentry monitor's config, slug
// among its aliases.
func proposedJob(slug string, mc monitorConfig) (string, error) {
	if !config.ValidAlias(slug) {
		return "", errors.New("monitor slug is not a slug")
	}
	name := slug
	if !jobname.Valid(name) {
		name = "sentry_" + slug
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- name: %s\n", name)
	switch mc.Schedule.Type {
	case "crontab":
		var cron string
		if json.Unmarshal(mc.Schedule.Value, &cron) != nil || strings.ContainsAny(cron, "\"\n\\") || len(cron) > 200 {
			return "", errors.New("crontab schedule is not a string")
		}
		fmt.Fprintf(&b, "  schedule: %q\n", cron)
	case "interval":
		n, err := strconv.Atoi(string(mc.Schedule.Value))
		unit, ok := intervalUnits[mc.Schedule.Unit]
		if err != nil || n <= 0 || !ok {
			return "", errors.New("interval schedule must be a positive number of minute, hour, day, week, month or year")
		}
		if mc.Schedule.Unit == "month" {
			n *= 30
		}
		fmt.Fprintf(&b, "  every: %d%s\n", n, unit)
	default:
		return "", fmt.Errorf("schedule type %q", mc.Schedule.Type)
	}
	if mc.Margin != nil && *mc.Margin > 0 {
		fmt.Fprintf(&b, "  grace: %dm\n", int(*mc.Margin))
	}
	if mc.MaxRuntime != nil && *mc.MaxRuntime > 0 {
		fmt.Fprintf(&b, "  timeout: %dm\n", int(*mc.MaxRuntime))
	}
	if tz := mc.Timezone; tz != "" && len(tz) < 64 && strings.Trim(tz, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/_+-") == "" {
		fmt.Fprintf(&b, "  timezone: %s\n", tz)
	}
	fmt.Fprintf(&b, "  aliases: [%s]\n", slug)
	return b.String(), nil
}
