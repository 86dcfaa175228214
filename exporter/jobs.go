package exporter

import (
	"errors"
	"fmt"

	"jobwatch/config"
	"jobwatch/model"
	"jobwatch/schedule"
)

// JobSpecs turns the configured jobs into the model's job specs.
func JobSpecs(cfg *config.Config) ([]model.JobSpec, error) {
	specs := make([]model.JobSpec, 0, len(cfg.Jobs))
	var errs []error
	for _, j := range cfg.Jobs {
		var sched schedule.Schedule
		switch {
		case j.Every > 0:
			sched = schedule.Every(j.Every)
		default:
			errs = append(errs, fmt.Errorf("job %q: only every: schedules are supported by this build", j.Name))
			continue
		}
		scope := j.Scope
		if scope == "" {
			scope = "host"
		}
		specs = append(specs, model.JobSpec{
			Name:          j.Name,
			Schedule:      sched,
			Grace:         j.Grace.D(),
			Timeout:       j.Timeout.D(),
			Scope:         scope,
			StaleMultiple: cfg.StaleMultiple,
		})
	}
	return specs, errors.Join(errs...)
}
