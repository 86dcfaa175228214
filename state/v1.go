package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// v1File is format 1: one JSON document, state.json, written by jobwatch
// before the state had a format of its own. Its jobs and sources are the
// records of format 2.
type v1File struct {
	Version int                      `json:"version"`
	Saved   time.Time                `json:"saved"`
	Jobs    map[string]*jobRecord    `json:"jobs"`
	Sources map[string]*sourceRecord `json:"sources"`
	Retired map[string]*sourceRecord `json:"retired,omitempty"`
}

// loadLegacy reads a format-1 state.json (nil, nil when there is none).
func (s *Store) loadLegacy() (*model.Snapshot, error) {
	path := s.path(LegacyFile)
	data, err := readNoFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading state %s: %w", path, err)
	}
	var f v1File
	// Unmarshal, unlike a Decoder, also rejects anything after the first
	// JSON value: format 1 never wrote that, so it means the file is damaged.
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("state %s is corrupt (move it away to start over, which reads every source again): %w", path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("state %s: state format version %d in %s, this jobwatch reads 1 to %d", path, f.Version, LegacyFile, Version)
	}
	return migrateV1(&f), nil
}

// migrateV1 turns a format-1 state into the current one. Nothing changes
// meaning between the two: only the files that hold it.
func migrateV1(f *v1File) *model.Snapshot {
	st := &model.Snapshot{Jobs: map[string]model.SavedJob{}, Sources: map[string]*model.SourceState{}}
	apply(st, &entry{Jobs: f.Jobs, Sources: f.Sources, Retired: f.Retired}, 1)
	return st
}
