package state

import (
	"slices"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// The keys of a job's pauses (format 6): the operator's pause in force,
// the maintenance window in force, when the latest ended, the spans whose
// expected runs are not judged, and those runs counted by reason
// (model/pause.go). A state of format 5 or before holds none.
type pausedRecord struct {
	Pause            *pauseRecord      `json:"pause,omitempty"`
	MaintenanceUntil time.Time         `json:"maintenance_until,omitzero"`
	PauseEnded       time.Time         `json:"pause_ended,omitzero"`
	Excused          []spanRecord      `json:"excused,omitempty"`
	Unjudged         map[string]uint64 `json:"unjudged,omitempty"`
}

type pauseRecord struct {
	From         time.Time `json:"from"`
	Until        time.Time `json:"until,omitzero"`
	UntilHealthy bool      `json:"until_healthy,omitempty"`
	Reason       string    `json:"reason,omitempty"`
}

type spanRecord struct {
	From   time.Time `json:"from"`
	Until  time.Time `json:"until"`
	Reason string    `json:"reason"`
}

// pausedToRecord converts a job's pauses (nil: none).
func pausedToRecord(p *model.Pauses) pausedRecord {
	if p == nil {
		return pausedRecord{}
	}
	r := pausedRecord{MaintenanceUntil: p.MaintenanceUntil, PauseEnded: p.PauseEnded}
	if !p.Pause.From.IsZero() {
		r.Pause = &pauseRecord{From: p.Pause.From, Until: p.Pause.Until, UntilHealthy: p.Pause.UntilHealthy, Reason: p.Pause.Reason}
	}
	for _, s := range p.Excused {
		r.Excused = append(r.Excused, spanRecord(s))
	}
	for i, n := range p.Unjudged {
		if n > 0 {
			if r.Unjudged == nil {
				r.Unjudged = map[string]uint64{}
			}
			r.Unjudged[model.UnjudgedReasons[i]] = n
		}
	}
	return r
}

// toModel converts the record back, nil when it holds none (the model's
// Pauses of most jobs); a span or count of a reason this version does not
// know is dropped.
func (r *pausedRecord) toModel() *model.Pauses {
	p := &model.Pauses{MaintenanceUntil: r.MaintenanceUntil, PauseEnded: r.PauseEnded}
	if r.Pause != nil && !r.Pause.From.IsZero() {
		p.Pause = model.Pause{From: r.Pause.From, Until: r.Pause.Until, UntilHealthy: r.Pause.UntilHealthy, Reason: r.Pause.Reason}
	}
	for _, s := range r.Excused {
		if slices.Index(model.UnjudgedReasons, s.Reason) >= 0 {
			p.Excused = append(p.Excused, model.Span(s))
		}
	}
	for i, reason := range model.UnjudgedReasons {
		p.Unjudged[i] = r.Unjudged[reason]
	}
	if p.Pause.From.IsZero() && p.MaintenanceUntil.IsZero() && p.PauseEnded.IsZero() && p.Excused == nil && p.Unjudged == [3]uint64{} {
		return nil
	}
	return p
}

// paused writes r's keys as json.Marshal would, inline in a job's object.
func (o *jsonOut) paused(r *pausedRecord) {
	if p := r.Pause; p != nil {
		o.key("pause")
		o.open('{')
		o.timeMember("from", p.From, false)
		o.timeMember("until", p.Until, true)
		o.boolMember("until_healthy", p.UntilHealthy)
		o.strMember("reason", p.Reason, true)
		o.close('}')
	}
	o.timeMember("maintenance_until", r.MaintenanceUntil, true)
	o.timeMember("pause_ended", r.PauseEnded, true)
	list(o, "excused", r.Excused, func(s *spanRecord) {
		o.open('{')
		o.timeMember("from", s.From, false)
		o.timeMember("until", s.Until, false)
		o.strMember("reason", s.Reason, false)
		o.close('}')
	})
	o.countsMember("unjudged", r.Unjudged)
}
