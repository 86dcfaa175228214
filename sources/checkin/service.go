package checkin

import (
	"net/http"
	"path/filepath"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/sources"
)

// rejected is the service's counter of refused check-ins.
const rejected = "checkins_rejected_total"

func init() {
	sources.RegisterService(sources.ServiceType{
		Type:       Type,
		Path:       "/ping/",
		LateWindow: LateWindow,
		Enabled:    func(c *config.Config) bool { return c.Checkins.Enabled },
		Open:       open,
		Off: func(w http.ResponseWriter, _ *http.Request, count func(counter, value string)) {
			count(rejected, RejectUnknownJob)
			http.Error(w, "check-ins are not enabled (checkins: in jobwatch.yml)", http.StatusNotFound)
		},
		Counters: []sources.Counter{{Name: rejected, Help: "Check-ins refused, by reason (docs/checkins.md).", Label: "reason", Values: RejectReasons}},
	})
}

// open opens the receiver, its spool in the state directory.
func open(d sources.ServiceDeps) (sources.Service, error) {
	r, err := OpenReceiver(Options{
		Dir:      filepath.Join(d.StateDir, "checkins"),
		Now:      d.Now,
		Logger:   d.Logger.With("source", Type),
		OnReject: func(reason string) { d.Count(rejected, reason) },
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

var _ sources.Service = (*Receiver)(nil)

// Configure sets the jobs a configuration accepts check-ins of (none while
// it has check-ins off) and its body limit.
func (r *Receiver) Configure(cfg *config.Config) sources.Source {
	c := cfg.Checkins
	if !c.Enabled {
		r.SetJobs(nil)
		return nil
	}
	r.SetMaxBody(int64(c.MaxBody))
	r.SetJobs(c.Accepted(cfg.Jobs))
	return r.Source()
}
