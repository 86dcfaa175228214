// Polling: the rows above the highest id read, the runs in progress and
// the gaps of ids re-read, each row's events, and the gaps given up once
// the database's open transactions say they stay empty.

package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// polled is what one poll read: the position it leads to, the events of the
// rows it read (in time order), how many rows were not read as runs, and
// whether rows are left to read at once.
type polled struct {
	next        *mysqlPosition
	events      []model.Event
	parseErrors int
	more        bool
}

// poller gathers what one poll reads.
type poller struct {
	m    *Source
	now  time.Time
	clk  dbClock
	next *mysqlPosition
	// open says, by id, whether a row read so far is in progress.
	open        map[int64]bool
	evs         []keyedEvent
	parseErrors int
}

// pollOnce reads what changed since pos: the runs in progress and the
// missing ids, re-read by id, then the rows above the highest id.
func (m *Source) pollOnce(ctx context.Context, db *sql.DB, pos *mysqlPosition, clk dbClock) (polled, error) {
	now := m.now().UTC()
	top, err := m.maxID(ctx, db)
	if err != nil {
		return polled{}, err
	}
	if top < pos.ID {
		return polled{}, errPositionGone
	}
	p := &poller{m: m, now: now, clk: clk, next: pos.clone(), open: make(map[int64]bool, len(pos.Open))}
	for _, id := range pos.Open {
		p.open[id] = true
	}

	// 1. Re-read the runs in progress and the missing ids.
	if err := p.reread(ctx, db, pos); err != nil {
		return polled{}, err
	}
	// 2. Read the rows above the highest id.
	more, err := p.readNew(ctx, db, pos.ID)
	if err != nil {
		return polled{}, err
	}
	// 3. Forget gaps looked for long enough, and bound the state.
	p.bound()
	return polled{next: p.next, events: sortEvents(p.evs), parseErrors: p.parseErrors, more: more}, nil
}

// reread reads again by id the runs pos has in progress and the ids it has
// missing, and forgets the gaps whose rows it found.
func (p *poller) reread(ctx context.Context, db *sql.DB, pos *mysqlPosition) error {
	seen := map[int64]bool{}
	var found []int64 // ids found in gaps
	for _, w := range rereadWheres(p.m.q["id"], pos) {
		rows, err := p.m.query(ctx, db, w.sql, w.args...)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if seen[r.id] {
				continue
			}
			seen[r.id] = true
			started := p.open[r.id]
			if !started {
				found = append(found, r.id)
			}
			p.add(r, started)
		}
	}
	for _, id := range pos.Open {
		if !seen[id] {
			p.m.log.Info("run in progress deleted from the table", "id", id)
			p.open[id] = false
		}
	}
	slices.Sort(found)
	p.next.Gaps = removeFound(p.next.Gaps, found)
	return nil
}

// A where is a WHERE clause and its arguments.
type where struct {
	sql  string
	args []any
}

// rereadWheres are the queries that read again the runs pos has in progress
// and the ids it has missing, by the column id: each names up to mysqlChunk
// single ids and mysqlChunk ranges.
func rereadWheres(id string, pos *mysqlPosition) []where {
	ids := slices.Clone(pos.Open)
	var ranges []mysqlGap
	for _, g := range pos.Gaps {
		if g.From == g.To {
			ids = append(ids, g.From)
		} else {
			ranges = append(ranges, g)
		}
	}
	var out []where
	for i := 0; i < len(ids) || i < len(ranges); i += mysqlChunk {
		var ors []string
		var args []any
		if i < len(ids) {
			part := ids[i:min(i+mysqlChunk, len(ids))]
			ors = append(ors, id+" IN ("+strings.Repeat("?, ", len(part)-1)+"?)")
			for _, v := range part {
				args = append(args, v)
			}
		}
		if i < len(ranges) {
			for _, g := range ranges[i:min(i+mysqlChunk, len(ranges))] {
				ors = append(ors, id+" BETWEEN ? AND ?")
				args = append(args, g.From, g.To)
			}
		}
		out = append(out, where{"WHERE " + strings.Join(ors, " OR "), args})
	}
	return out
}

// readNew reads up to mysqlBatchRows rows above the id from, noting the ids
// it skips as gaps. more says it read a full batch.
func (p *poller) readNew(ctx context.Context, db *sql.DB, from int64) (more bool, err error) {
	c := p.m.q
	rows, err := p.m.query(ctx, db, "WHERE "+c["id"]+" > ? ORDER BY "+c["id"]+" LIMIT "+fmt.Sprint(mysqlBatchRows), from)
	if err != nil {
		return false, err
	}
	prev := from
	for _, r := range rows {
		if r.id > prev+1 {
			p.next.Gaps = append(p.next.Gaps, mysqlGap{From: prev + 1, To: r.id - 1, Since: p.now})
		}
		prev = r.id
		p.add(r, false)
	}
	p.next.ID = prev
	return len(rows) == mysqlBatchRows, nil
}

// add keeps r's events and whether it is in progress. started says its
// Start was emitted already.
func (p *poller) add(r runRow, started bool) {
	e, isOpen, err := p.m.rowEvents(r, started)
	if err != nil {
		p.parseErrors++
		p.m.log.Warn("row not read as a run", "id", r.id, "err", err)
	}
	p.evs = append(p.evs, e...)
	p.open[r.id] = isOpen
}

// bound forgets the gaps no transaction can fill any more and, beyond
// mysqlMaxGaps, the lowest; the next position keeps the runs still in
// progress, capped.
func (p *poller) bound() {
	next := p.next
	next.Gaps = slices.DeleteFunc(next.Gaps, p.givenUp)
	if len(next.Gaps) > mysqlMaxGaps {
		slices.SortFunc(next.Gaps, func(a, b mysqlGap) int { return cmp.Compare(a.From, b.From) })
		drop := len(next.Gaps) - mysqlMaxGaps
		p.m.log.Warn("too many missing ids to look for; forgetting the oldest", "dropped_ranges", drop)
		next.Gaps = next.Gaps[drop:]
	}
	next.Open = next.Open[:0]
	for id, o := range p.open {
		if o {
			next.Open = append(next.Open, id)
		}
	}
	p.m.capOpen(next)
	next.normalize()
}

// givenUp says a gap's ids are looked for no more: after the late window,
// unless the database's open transactions are known and a transaction
// open since before the gap was seen may hold them, or they are not known
// as of when it was seen; for at most MaxTrxHold.
func (p *poller) givenUp(g mysqlGap) bool {
	waited := p.now.Sub(g.Since)
	switch {
	case waited < p.m.late:
		return false
	case !p.clk.known || waited >= MaxTrxHold:
		return true
	case !g.Since.Before(p.clk.asOf):
		return false // seen after what the database said was true
	}
	return p.clk.oldest.IsZero() || p.clk.oldest.After(g.Since.Add(WatermarkMargin))
}
