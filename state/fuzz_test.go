package state

import (
	"encoding/json"
	"testing"

	"github.com/jobwatch/jobwatch/model"
)

func fuzzSeeds(f *testing.F) (snapshot, log []byte) {
	h, _ := json.Marshal(header{Format: formatName, Version: Version, Kind: "snapshot", Generation: 1})
	snapshot = appendFrame(nil, h)
	snapshot = appendFrame(snapshot, []byte(`{"jobs":{"stats":{"first_watched":"2026-11-30T10:00:00Z","runs":{"success":2},"durations":{"counts":[1],"sum":1,"count":1},"open":[{"key":{"run_id":"r"},"start":"2026-11-30T10:00:00Z","source":"runs"}]}},"sources":{"runs":{"records":4,"parse_errors":0,"unknown_job":0,"position_resets":0,"position":{"offset":9}}},"end":true}`))
	h, _ = json.Marshal(header{Format: formatName, Version: Version, Kind: "log", Generation: 1})
	log = appendFrame(nil, h)
	log = appendFrame(log, []byte(`{"jobs":{"backup":{"first_watched":"2026-11-30T10:00:00Z","skips":1}},"removed_jobs":["stats"],"retired_none":true}`))
	return snapshot, log
}

// The snapshot reader never panics, and what it accepts it reads again the
// same once written back.
func FuzzSnapshot(f *testing.F) {
	snap, log := fuzzSeeds(f)
	f.Add(snap)
	f.Add(log)
	f.Add(snap[:len(snap)-3])
	f.Fuzz(func(t *testing.T, data []byte) {
		st := &model.Snapshot{Jobs: map[string]model.SavedJob{}, Sources: map[string]*model.SourceState{}}
		if _, err := readSnapshot(data, st); err != nil {
			return
		}
		for n, j := range st.Jobs {
			if _, err := json.Marshal(jobToRecord(&model.JobView{JobState: &j.JobState, History: j.History, Open: j.Open}, nil)); err != nil {
				t.Fatalf("job %q read from a snapshot cannot be written: %v", n, err)
			}
		}
	})
}

// The log reader never panics; a log cut anywhere after its header reads
// without error (a torn save), holding a prefix of its entries.
func FuzzLog(f *testing.F) {
	_, log := fuzzSeeds(f)
	f.Add(log, uint16(len(log)))
	f.Add(log, uint16(len(log)-5))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		st := &model.Snapshot{Jobs: map[string]model.SavedJob{}, Sources: map[string]*model.SourceState{}}
		_ = readLog(data, 1, st)
		// The same log cut short: never an error once the header is whole.
		hdr, off, err := readHeader(data, "log")
		if err != nil || hdr.Generation != 1 || readLog(data, 1, &model.Snapshot{Jobs: map[string]model.SavedJob{}, Sources: map[string]*model.SourceState{}}) != nil {
			return
		}
		n := off + int(cut)%(len(data)-off+1)
		if err := readLog(data[:n], 1, &model.Snapshot{Jobs: map[string]model.SavedJob{}, Sources: map[string]*model.SourceState{}}); err != nil {
			t.Fatalf("a valid log cut at byte %d of %d: %v", n, len(data), err)
		}
	})
}
