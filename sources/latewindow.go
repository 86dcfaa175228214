package sources

import (
	"errors"
	"time"

	"github.com/jobwatch/jobwatch/config"
)

// LateWindowOf is a source's late_window key (docs/schedules.md, "Late
// records"), def when the key is unset (0).
func LateWindowOf(key config.Duration, def time.Duration) time.Duration {
	if key == 0 {
		return def
	}
	return key.D()
}

// CheckLateWindow is the late_window key's error, nil when it is valid.
func CheckLateWindow(key config.Duration) error {
	if key < 0 {
		return errors.New("late_window must not be negative")
	}
	return nil
}
