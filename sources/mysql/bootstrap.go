// The first start: each configured job's last success, failure and timeout
// and its runs in progress, read by bounded queries on an index, before
// polling goes on from the highest id.

package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/jobwatch/jobwatch/model"
)

// bootstrap is the first start: for each configured job its last success,
// last failure, last timeout and its runs in progress, each from a bounded
// query on an index (see indexPlan; without one, from the rows just below
// the highest id); then reading goes on from the highest id.
func (m *Source) bootstrap(ctx context.Context, db *sql.DB, plan indexPlan) (*mysqlPosition, []model.Event, error) {
	top, err := m.maxID(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	pos := &mysqlPosition{V: mysqlPositionVersion, ID: top}
	if top > 0 {
		// Ids just below the highest may belong to transactions not yet
		// committed: look for them as gaps.
		low := max(0, top-mysqlStartTail)
		ids, err := m.idsIn(ctx, db, low, top)
		if err != nil {
			return nil, nil, err
		}
		pos.Gaps = removeFound([]mysqlGap{{From: low + 1, To: top, Since: m.now().UTC()}}, ids)
	}
	b := &bootstrapper{m: m, top: top, open: map[int64]bool{}}
	if err := b.find(ctx, db, plan); err != nil {
		return nil, nil, err
	}
	b.addLast()
	for id := range b.open {
		pos.Open = append(pos.Open, id)
	}
	m.capOpen(pos)
	return pos, sortEvents(b.evs), nil
}

// idsIn is the ids above low and up to top, in order.
func (m *Source) idsIn(ctx context.Context, db *sql.DB, low, top int64) ([]int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT "+m.q["id"]+" FROM "+m.table+" WHERE "+m.q["id"]+" > ? AND "+m.q["id"]+" <= ? ORDER BY "+m.q["id"], low, top)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, &scanError{err}
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// bootstrapClasses are the results whose last run the first start reads.
var bootstrapClasses = []statusClass{statusSuccess, statusFailure, statusTimeout}

type lastKey struct {
	job   string
	class statusClass
}

// bootstrapper gathers what the first start finds.
type bootstrapper struct {
	m    *Source
	top  int64
	last map[lastKey]runRow
	open map[int64]bool
	evs  []keyedEvent
}

// find reads, by the look-ups plan allows, each job's last results and its
// runs in progress.
func (b *bootstrapper) find(ctx context.Context, db *sql.DB, plan indexPlan) error {
	if plan.window() {
		if err := b.window(ctx, db, !plan.byStatus); err != nil {
			return err
		}
	}
	for _, job := range b.m.jobs {
		switch {
		case plan.byStatus:
			if err := b.lastByStatus(ctx, db, job); err != nil {
				return err
			}
		case plan.byFinished:
			if err := b.walkBack(ctx, db, job); err != nil {
				return err
			}
		}
		if !plan.byFinished {
			continue // found in the window
		}
		if err := b.openOf(ctx, db, job); err != nil {
			return err
		}
	}
	return nil
}

// openOf reads job's latest runs in progress, up to mysqlBootstrapOpen, on
// the (job, finished_at) index.
func (b *bootstrapper) openOf(ctx context.Context, db *sql.DB, job string) error {
	c := b.m.q
	rows, err := b.m.query(ctx, db, "WHERE "+c["job"]+" = ? AND "+c["finished_at"]+" IS NULL ORDER BY "+c["started_at"]+" DESC LIMIT "+fmt.Sprint(mysqlBootstrapOpen), job)
	if err != nil {
		return err
	}
	for _, r := range rows {
		b.addOpen(r)
	}
	return nil
}

// addLast adds the events of each job's last run of each result found.
func (b *bootstrapper) addLast() {
	for _, job := range b.m.jobs {
		for _, class := range bootstrapClasses {
			if r, ok := b.last[lastKey{job, class}]; ok {
				if e, _, err := b.m.rowEvents(r, false); err == nil {
					b.evs = append(b.evs, e...)
				}
			}
		}
	}
}

// offer keeps r if it is the latest finished run of its job and result
// seen so far.
func (b *bootstrapper) offer(job string, r runRow) {
	if r.id > b.top || !r.finished.Valid {
		return // newer than the start point: read incrementally
	}
	class := b.m.class(r.status)
	if !slices.Contains(bootstrapClasses, class) {
		return
	}
	if b.last == nil {
		b.last = map[lastKey]runRow{}
	}
	k := lastKey{job, class}
	if old, ok := b.last[k]; !ok || r.finished.Time.After(old.finished.Time) {
		b.last[k] = r
	}
}

// addOpen keeps r if it is a run in progress.
func (b *bootstrapper) addOpen(r runRow) {
	if r.id > b.top || r.finished.Valid || b.m.class(r.status) == statusSkipped || b.open[r.id] {
		return
	}
	e, isOpen, err := b.m.rowEvents(r, false)
	if err != nil || !isOpen {
		return
	}
	b.evs = append(b.evs, e...)
	b.open[r.id] = true
}

// lastByStatus reads job's last run of each result: one row per status
// value, on the (job, status, finished_at) index.
func (b *bootstrapper) lastByStatus(ctx context.Context, db *sql.DB, job string) error {
	m, c := b.m, b.m.q
	for _, class := range bootstrapClasses {
		for _, v := range m.statusVals[class] {
			rows, err := m.query(ctx, db, "WHERE "+c["job"]+" = ? AND "+c["status"]+" = ? AND "+c["finished_at"]+" IS NOT NULL ORDER BY "+c["finished_at"]+" DESC LIMIT 1", job, v)
			if err != nil {
				return err
			}
			for _, r := range rows {
				b.offer(job, r)
			}
		}
	}
	return nil
}

// walkBack reads job's last mysqlBootstrapWalk finished runs, newest first,
// on the (job, finished_at) index, and keeps the last of each result among
// them. One query: MariaDB reads such a look-up from the job's newest entry
// down (ref access), so pages would each read again what the ones before
// them read.
func (b *bootstrapper) walkBack(ctx context.Context, db *sql.DB, job string) error {
	c := b.m.q
	rows, err := b.m.query(ctx, db, "WHERE "+c["job"]+" = ? AND "+c["finished_at"]+" IS NOT NULL ORDER BY "+c["finished_at"]+" DESC LIMIT "+fmt.Sprint(mysqlBootstrapWalk), job)
	if err != nil {
		return err
	}
	for _, r := range rows {
		b.offer(job, r)
	}
	return nil
}

// window reads the rows just below the highest id, newest first, by the
// primary key: the runs in progress among them and, if results, each job's
// last results among them. It is the first start's look-up for a table
// without an index by job: bounded, at the cost of not finding older rows.
func (b *bootstrapper) window(ctx context.Context, db *sql.DB, results bool) error {
	m, c := b.m, b.m.q
	jobs := make(map[string]bool, len(m.jobs))
	for _, j := range m.jobs {
		jobs[j] = true
	}
	low := max(0, b.top-mysqlBootstrapWindow)
	var open []runRow
	for hi := b.top; hi > low; {
		rows, err := m.query(ctx, db, "WHERE "+c["id"]+" > ? AND "+c["id"]+" <= ? ORDER BY "+c["id"]+" DESC LIMIT "+fmt.Sprint(mysqlBatchRows), low, hi)
		if err != nil {
			return err
		}
		for _, r := range rows {
			job := strings.TrimSpace(r.job.String)
			switch {
			case !jobs[job]:
			case !r.finished.Valid:
				open = append(open, r)
			case results:
				b.offer(job, r)
			}
		}
		if len(rows) < mysqlBatchRows {
			break
		}
		hi = rows[len(rows)-1].id - 1
	}
	// In id order, as the look-up by job has them.
	for _, r := range slices.Backward(open) {
		b.addOpen(r)
	}
	return nil
}
