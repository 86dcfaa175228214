package exporter

import (
	"fmt"

	"github.com/jobwatch/jobwatch/model"
)

// Pause pauses a job (model.Tracker.Pause) and saves the state before it
// returns: a pause the API acknowledged survives a crash right after.
func (e *Exporter) Pause(job string, p model.Pause) (model.Pause, error) {
	p, err := e.tracker.Pause(job, p)
	if err != nil {
		return p, err
	}
	if err := e.save(); err != nil {
		return p, fmt.Errorf("paused, but the state could not be saved (a restart may lose the pause): %w", err)
	}
	return p, nil
}

// Resume ends a job's pause (model.Tracker.Resume) and saves the state
// before it returns.
func (e *Exporter) Resume(job string) error {
	if err := e.tracker.Resume(job); err != nil {
		return err
	}
	if err := e.save(); err != nil {
		return fmt.Errorf("resumed, but the state could not be saved (a restart may pause the job again): %w", err)
	}
	return nil
}
