package discover

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"jobwatch/model"
	"jobwatch/state"
)

// ReadState reads the state file of a jobwatch state directory without
// taking its lock (a running jobwatch holds it, and replaces the file
// atomically), for the durations its jobs' runs took.
func ReadState(dir string) (*model.Snapshot, error) {
	p := filepath.Join(dir, state.FileName)
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var snap model.Snapshot
	if err := json.NewDecoder(f).Decode(&snap); err != nil {
		return nil, fmt.Errorf("state %s: %w", p, err)
	}
	if snap.Version != model.SnapshotVersion {
		return nil, fmt.Errorf("state %s: version %d, this jobwatch reads %d", p, snap.Version, model.SnapshotVersion)
	}
	return &snap, nil
}

// P99 returns, for each job of the state with recorded runs, the 99th
// percentile of its run durations, rounded up to the bound of the
// histogram bucket it falls in (above the largest bound: the last
// duration, if longer).
func P99(snap *model.Snapshot) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, j := range snap.Jobs {
		h := j.Durations
		if h.Count == 0 || len(h.Counts) != len(model.DurationBuckets)+1 {
			continue
		}
		need := (h.Count*99 + 99) / 100 // ceil(0.99 * count)
		var cum uint64
		for i, c := range h.Counts {
			cum += c
			if cum < need {
				continue
			}
			bound := model.DurationBuckets[len(model.DurationBuckets)-1]
			if i < len(model.DurationBuckets) {
				bound = model.DurationBuckets[i]
			} else if j.LastDuration > bound {
				bound = j.LastDuration
			}
			out[name] = time.Duration(bound * float64(time.Second))
			break
		}
	}
	return out
}
