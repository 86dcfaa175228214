package status

import (
	"fmt"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// StatePaused: the job is paused (jobwatch pause) or in a maintenance
// window: its expected runs are not judged, and it is not stale
// (Job.Paused says why and until when).
const StatePaused = "paused"

// Paused is why and until when a job is paused.
type Paused struct {
	// Why is paused (an operator's pause) or maintenance (a window).
	Why   string     `json:"why"`
	Since *time.Time `json:"since"`
	// Until is when it ends, null when not known: until resumed, or until
	// the next success (UntilHealthy).
	Until        *time.Time `json:"until"`
	UntilHealthy bool       `json:"until_healthy"`
	// Reason is the operator's text (jobwatch pause --reason).
	Reason string `json:"reason,omitempty"`
}

// pausedOf is v's pause in force, nil when it has none.
func pausedOf(v *model.JobView) *Paused {
	why := v.Pauses.Why()
	if why == "" {
		return nil
	}
	p := &Paused{Why: why, Until: timePtr(v.Pauses.Until())}
	if why == model.UnjudgedPaused {
		p.Since, p.UntilHealthy, p.Reason = timePtr(v.Pauses.Pause.From), v.Pauses.Pause.UntilHealthy, v.Pauses.Pause.Reason
	}
	return p
}

// text says why and until when, for jobwatch check: "paused until
// 2026-12-06T14:00:00Z (db upgrade)", "in a maintenance window until ...".
func (p *Paused) text() string {
	what := "paused"
	if p.Why == "maintenance" {
		what = "in a maintenance window"
	}
	switch {
	case p.Until != nil:
		what += " until " + p.Until.Format(time.RFC3339)
	case p.UntilHealthy:
		what += " until its next success"
	default:
		what += " until resumed"
	}
	if p.Reason != "" {
		what += fmt.Sprintf(" (%s)", p.Reason)
	}
	return what
}
