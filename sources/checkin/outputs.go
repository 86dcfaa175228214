package checkin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/jobwatch/jobwatch/model"
)

// A check-in's output is written once, where it arrives: in its spool
// record. The model keeps a reference to it (model.Event.OutputRef) in its
// place, and the segments holding the outputs of a job's latest runs are
// kept after they have been applied (kept), at most maxKeptSegments of
// them before the one being read; the status API reads an output by its
// reference (ReadOutput).

// maxKeptSegments bounds the segments kept for their outputs: 16 of 64
// MiB. An output in an older one reads as no longer kept.
const maxKeptSegments = 16

const refPrefix = Type + ":"

// outputRef is the reference to the output of the record at at.
func outputRef(at Position) string {
	return refPrefix + strconv.Itoa(at.Segment) + ":" + strconv.FormatInt(at.Offset, 10)
}

func parseRef(ref string) (Position, bool) {
	rest, ok := strings.CutPrefix(ref, refPrefix)
	if !ok {
		return Position{}, false
	}
	seg, off, ok := strings.Cut(rest, ":")
	if !ok {
		return Position{}, false
	}
	s, err1 := strconv.Atoi(seg)
	o, err2 := strconv.ParseInt(off, 10, 64)
	if err1 != nil || err2 != nil || s < 1 || o < 0 {
		return Position{}, false
	}
	return Position{Segment: s, Offset: o}, true
}

// ReadOutput reads the output of the check-in a reference names from the
// spool segment that holds it.
func (r *Receiver) ReadOutput(ref string) (string, error) {
	at, ok := parseRef(ref)
	if !ok {
		return "", fmt.Errorf("not a check-in output reference: %q", ref)
	}
	lines, _, err := readSegment(filepath.Join(r.opts.Dir, segmentName(at.Segment)), at, 1)
	if errors.Is(err, os.ErrNotExist) {
		return "", errors.New("its check-in spool segment was removed")
	}
	if err != nil {
		return "", err
	}
	if len(lines) == 0 || lines[0].data == nil {
		return "", errors.New("no check-in record there")
	}
	var rec spoolRecord
	if err := json.Unmarshal(lines[0].data, &rec); err != nil {
		return "", fmt.Errorf("the check-in record: %w", err)
	}
	return rec.Output, nil
}

// kept is where the outputs of each job's latest runs are in the spool.
type kept struct {
	mu         sync.Mutex
	jobs       map[string][]Position // oldest first, at most model.MaxRecentRuns
	remembered bool                  // remember has read the spool once
}

func (k *kept) add(job string, at Position) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.jobs == nil {
		k.jobs = map[string][]Position{}
	}
	l := append(k.jobs[job], at)
	if len(l) > model.MaxRecentRuns {
		l = l[len(l)-model.MaxRecentRuns:]
	}
	k.jobs[job] = l
}

// from is the first segment to keep when reading is at segment at: the
// oldest holding an output kept, within maxKeptSegments of at.
func (k *kept) from(at int) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	first := at
	for _, l := range k.jobs {
		if len(l) > 0 && l[0].Segment < first {
			first = l[0].Segment
		}
	}
	return max(first, at-maxKeptSegments+1)
}

// remember notes the outputs of the segments kept before from, read and
// applied before a restart.
func (k *kept) remember(dir string, from Position) error {
	k.mu.Lock()
	done := k.remembered
	k.remembered = true
	k.mu.Unlock()
	if done {
		return nil
	}
	segs, err := segments(dir)
	if err != nil || len(segs) == 0 || segs[0] >= from.Segment {
		return err
	}
	pos := Position{Segment: segs[0]}
	for pos.Segment < from.Segment || pos.Segment == from.Segment && pos.Offset < from.Offset {
		lines, next, err := readLines(dir, pos, batchLines)
		if err != nil {
			return err
		}
		for _, l := range lines {
			if l.at.Segment > from.Segment || l.at.Segment == from.Segment && l.at.Offset >= from.Offset {
				return nil
			}
			var rec spoolRecord
			if l.data != nil && json.Unmarshal(l.data, &rec) == nil && rec.Output != "" {
				k.add(rec.Job, l.at)
			}
		}
		if len(lines) == 0 || next == pos {
			return nil
		}
		pos = next
	}
	return nil
}
