// Package mysql reads runs from a job_runs table: one row per run, inserted
// when the run starts and updated when it finishes. Its block names the
// DSN, the table, its columns and status values; its saved position (see
// position.go) is the highest id read, the runs read in progress and the
// ids missing below the highest; its identity is a hash of the DSN and the
// table. Check, for check-config, verifies the table and its columns.
package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/jobwatch/jobwatch/config"
	"github.com/jobwatch/jobwatch/internal/jobruns"
	"github.com/jobwatch/jobwatch/internal/secret"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
)

// Bounds of a mysql source's work and state.
const (
	// mysqlBatchRows is how many new rows one poll reads; a full batch is
	// followed by another poll at once.
	mysqlBatchRows = 1000
	// mysqlMaxGaps bounds the ranges of missing ids looked for every poll.
	mysqlMaxGaps = 10000
	// mysqlBootstrapOpen bounds the runs in progress per job read on first start.
	mysqlBootstrapOpen = 1000
	// mysqlBootstrapWalk bounds the finished runs of each job read back on
	// first start to find its last results, when the table has an index on
	// (job, finished_at) but none on (job, status, finished_at).
	mysqlBootstrapWalk = 2000
	// mysqlBootstrapWindow bounds the rows read back from the highest id on
	// first start, for the look-ups the table has no index for.
	mysqlBootstrapWindow = 50000
	// mysqlStartTail is how many ids below the highest are checked on first
	// start for transactions not yet committed.
	mysqlStartTail = 256
	// mysqlChunk is how many ids or ranges one re-read query names.
	mysqlChunk = 500
	// mysqlMaxBackoff caps the wait between failed polls.
	mysqlMaxBackoff = time.Minute
)

// Source reads runs from a job_runs table: one row per run, inserted when the
// run starts and updated when it finishes (or inserted finished), possibly
// by schedulers on many hosts.
//
// It reads incrementally, by id: rows above the highest id read, the rows
// read in progress (by id, to see them finish) and the ids missing below the
// highest (transactions committed out of id order, looked for during the
// late window). See mysqlPosition.
type Source struct {
	name string
	log  *slog.Logger
	now  func() time.Time
	jobs []string

	dsn *mysql.Config
	red *secret.Redactor

	schema, tableName string // schema may be empty: the DSN's database
	table             string // quoted, qualified if configured so
	// jt reads the table's columns and indexes (information_schema), as
	// the check-in store and --record-mysql do.
	jt         *jobruns.Table
	cols       Columns
	q          map[string]string // quoted column names by config key
	selectList string

	status     map[string]statusClass // lower-cased value -> class
	statusVals map[statusClass][]string

	poll, late time.Duration
	// fixedLate: late_window is set, and the database's open
	// transactions are not asked (watermark.go).
	fixedLate bool
	// hasRunID says the table has a run_id column (a check-in's ?rid=,
	// docs/checkins.md): checkSchema finds out, query reads it.
	hasRunID atomic.Bool
	// hasOutput says the table has an output column (a check-in's body):
	// query reads its end, at most model.OutputExcerpt bytes.
	hasOutput atomic.Bool
	// wait sleeps d or until ctx is done (false). Tests replace it.
	wait func(ctx context.Context, d time.Duration) bool
}

var _ sources.Source = (*Source)(nil)
var _ sources.Checker = (*Source)(nil)

type statusClass uint8

const (
	statusUnknown statusClass = iota
	statusSuccess
	statusFailure
	statusTimeout
	statusSkipped
)

// New builds a mysql source named name. It reads and parses the DSN but
// does not connect: Run and Check do.
func New(name string, c Config, deps sources.Deps) (*Source, error) {
	deps = deps.WithDefaults()
	if errs := c.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("source %q: %w", name, config.Join(errs...))
	}
	log := deps.Logger.With("source", name, "type", Type)
	dsn, red, err := secret.LoadMySQL(secret.MySQL{DSN: c.DSN, File: c.DSNFile}, log)
	if err != nil {
		return nil, fmt.Errorf("source %q: %w", name, err)
	}
	m := &Source{
		name: name, log: log, now: deps.Now, jobs: slices.Clone(deps.Jobs),
		dsn: dsn, red: red,
		cols: c.ColumnNames(), poll: c.Poll(), late: c.Late(), fixedLate: c.Lateness != 0,
		q:          map[string]string{},
		status:     map[string]statusClass{},
		statusVals: map[statusClass][]string{},
		wait:       sources.Sleep,
	}
	slices.Sort(m.jobs)
	m.jobs = slices.Compact(m.jobs)
	table := c.TableName()
	if m.jt, err = jobruns.ParseTable(table); err != nil {
		return nil, fmt.Errorf("source %q: %w", name, err)
	}
	m.schema, m.tableName = m.jt.Schema, m.jt.Name
	if m.schema != "" {
		m.table = quoteIdent(m.schema) + "." + quoteIdent(m.tableName)
	} else {
		m.table = quoteIdent(m.tableName)
	}
	var list []string
	for _, kv := range m.cols.NamedColumns() {
		m.q[kv[0]] = quoteIdent(kv[1])
		list = append(list, m.q[kv[0]])
	}
	m.selectList = strings.Join(list, ", ")
	st := c.Statuses()
	for _, g := range []struct {
		class  statusClass
		values []string
	}{{statusSuccess, st.Success}, {statusFailure, st.Failure}, {statusTimeout, st.Timeout}, {statusSkipped, st.Skipped}} {
		for _, v := range g.values {
			m.status[strings.ToLower(v)] = g.class
		}
		m.statusVals[g.class] = g.values
	}
	return m, nil
}

// quoteIdent quotes a name that config validation has restricted to
// [A-Za-z0-9_$]; doubling backquotes keeps it safe even if it were not.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

func (m *Source) Name() string { return m.name }
func (m *Source) Type() string { return Type }

// String shows the source without its password.
func (m *Source) String() string {
	return fmt.Sprintf("mysql source %q (%s, table %s)", m.name, secret.RedactedDSN(m.dsn), m.table)
}

// where names the server and table in errors, without the password.
func (m *Source) where() string {
	return fmt.Sprintf("%s@%s(%s)/%s table %s", m.dsn.User, m.dsn.Net, m.dsn.Addr, m.dsn.DBName, m.table)
}

func (m *Source) open() (*sql.DB, error) {
	conn, err := mysql.NewConnector(m.dsn)
	if err != nil {
		return nil, m.red.Err(fmt.Errorf("dsn: %w", err))
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(10 * time.Minute)
	return db, nil
}

// Check connects and checks the table and its columns, for check-config.
// When the server cannot be reached the error wraps sources.ErrUnreachable.
func (m *Source) Check(ctx context.Context) error {
	db, err := m.open()
	if err != nil {
		return err
	}
	defer db.Close()
	plan, err := m.checkSchema(ctx, db)
	if err != nil {
		err = fmt.Errorf("%s: %w", m.where(), err)
		if r := failureReason(err); r == "connection" || r == "timeout" {
			err = fmt.Errorf("database %w: %w", sources.ErrUnreachable, err)
		}
		return m.red.Err(err)
	}
	var warns []string
	for _, w := range []string{m.indexWarning(plan), m.watermarkWarning(ctx, db)} {
		if w != "" {
			warns = append(warns, w)
		}
	}
	if len(warns) > 0 {
		return sources.Warning(strings.Join(warns, "; "))
	}
	return nil
}

// logIndexes says, once a Run, what the table's indexes make the first start
// do when they are not those of examples/job_runs.sql.
func (m *Source) logIndexes(p indexPlan) {
	stmts, _ := p.missing(m.cols, m.table)
	switch {
	case len(stmts) == 0:
	case m.indexWarning(p) != "":
		m.log.Warn("table lacks the indexes of the first start's look-ups; it reads back only from the highest id",
			"table", m.table, "rows", mysqlBootstrapWindow, "create", strings.Join(stmts, "; "))
	default:
		m.log.Info("table lacks recommended indexes; the first start walks back each job's finished runs",
			"table", m.table, "rows_per_job", mysqlBootstrapWalk, "create", strings.Join(stmts, "; "))
	}
}

// Run polls the table until ctx is done.
func (m *Source) Run(ctx context.Context, from json.RawMessage, sink sources.Sink) error {
	db, err := m.open()
	if err != nil {
		sources.NewHealth(m.name, sink, m.log).Down("dsn", err, "reason", "dsn")
		<-ctx.Done()
		return nil
	}
	defer db.Close()
	r := m.newRunner(db, from, sink)
	failures := 0
	for {
		more, err := r.step(ctx)
		if ctx.Err() != nil {
			return nil
		}
		delay := m.poll
		switch {
		case err != nil:
			failures++
			delay = m.backoff(failures)
		case more:
			failures, delay = 0, 0
		default:
			failures = 0
		}
		if !m.wait(ctx, delay) {
			return nil
		}
	}
}

// backoff doubles the poll interval per failed poll, up to a minute (or the
// poll interval, if longer).
func (m *Source) backoff(failures int) time.Duration {
	limit := max(m.poll, min(mysqlMaxBackoff, 12*m.poll))
	d := m.poll
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// mysqlRunner is the state of one Run.
type mysqlRunner struct {
	m    *Source
	db   *sql.DB
	sink sources.Sink

	pos       *mysqlPosition // nil: not started (bootstrap next)
	lastPos   []byte
	resets    int  // position resets not yet handed over
	needCheck bool // check the schema before the next poll
	plan      indexPlan
	advised   bool // the missing indexes were logged

	health *sources.Health
	trx    trxReader
}

func (m *Source) newRunner(db *sql.DB, from json.RawMessage, sink sources.Sink) *mysqlRunner {
	r := &mysqlRunner{m: m, db: db, sink: sink, needCheck: true, health: sources.NewHealth(m.name, sink, m.log), trx: trxReader{m: m}}
	if len(from) > 0 && string(from) != "null" {
		p, err := parseMySQLPosition(from)
		if err != nil {
			m.log.Warn("saved position unreadable; starting afresh", "err", err)
			r.resets++
		} else {
			r.pos = p
			r.lastPos = p.encode()
		}
	}
	return r
}

// step is one poll: it hands one batch to the sink, or reports the source
// down. more says that rows are left to read at once.
func (r *mysqlRunner) step(ctx context.Context) (more bool, err error) {
	m := r.m
	qctx, cancel := context.WithTimeout(ctx, max(30*time.Second, m.poll))
	defer cancel()
	if r.needCheck {
		plan, err := m.checkSchema(qctx, r.db)
		if err != nil {
			err = m.red.Err(fmt.Errorf("%s: %w", m.where(), err))
			r.down(ctx, err)
			return false, err
		}
		r.plan = plan
		if !r.advised {
			r.advised = true
			m.logIndexes(plan)
		}
		r.needCheck = false
	}
	b, next, clk, more, err := r.read(qctx)
	if err != nil {
		r.needCheck = true
		err = m.red.Err(fmt.Errorf("%s: %w", m.where(), err))
		r.down(ctx, err)
		return false, err
	}
	r.markUp()
	b.Source = m.name
	// A poll that read fewer rows than its limit read everything there
	// is, and so did a first start (up to the highest id it found): the
	// batch says AtEnd, even an empty one. It carries no position when
	// nothing changed, so an empty poll saves nothing more than before.
	b.AtEnd = !more
	if b.AtEnd && clk.known {
		b.Watermark = clk.mark
	}
	b.PositionResets, r.resets = r.resets, 0
	if enc := next.encode(); string(enc) != string(r.lastPos) {
		b.Position = enc
		r.lastPos = enc
	}
	r.pos = next
	r.sink.Apply(b)
	return more, nil
}

// read asks the database what it can still commit, then reads the table:
// the first start's look-ups, or a poll. It returns the batch's events and
// parse errors, and the position they lead to.
func (r *mysqlRunner) read(ctx context.Context) (b model.Batch, next *mysqlPosition, clk dbClock, more bool, err error) {
	m := r.m
	if clk, err = r.trx.read(ctx, r.db); err != nil {
		return b, nil, clk, false, err
	}
	if r.pos == nil {
		next, b.Events, err = m.bootstrap(ctx, r.db, r.plan)
		return b, next, clk, false, err
	}
	p, err := m.pollOnce(ctx, r.db, r.pos, clk)
	if errors.Is(err, errPositionGone) {
		m.log.Warn("table has no rows up to the saved position (truncated or replaced?); starting afresh", "saved_id", r.pos.ID)
		r.resets++
		next, b.Events, err = m.bootstrap(ctx, r.db, r.plan)
		return b, next, clk, false, err
	}
	b.Events, b.ParseErrors = p.events, p.parseErrors
	return b, p.next, clk, p.more, err
}

// down reports the source down; a new reason is logged, a repeated one not.
func (r *mysqlRunner) down(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // shutting down: not the database's fault
	}
	err = r.m.red.Err(err)
	reason := failureReason(err)
	r.health.Down(reason, err, "reason", reason)
}

func (r *mysqlRunner) markUp() { r.health.Up() }

// failureReason classifies an error into a reason stable across polls.
func failureReason(err error) string {
	var se *schemaError
	var me *mysql.MySQLError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return se.reason
	case errors.As(err, &me):
		switch me.Number {
		case 1045:
			return "access denied"
		case 1044, 1142, 1143:
			return "permission denied"
		case 1049:
			return "unknown database"
		case 1146:
			return "table missing"
		case 1054:
			return "column missing"
		case 1040, 1203:
			return "too many connections"
		}
		return fmt.Sprintf("mysql error %d", me.Number)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne):
		return "connection"
	case errors.As(err, new(*scanError)):
		return "bad value"
	}
	return "error"
}

var errPositionGone = errors.New("saved position is beyond the table's highest id")

// scanError is a row the driver could not convert (a column whose type
// changed under a running source).
type scanError struct{ err error }

func (e *scanError) Error() string { return "reading a row: " + e.err.Error() }
func (e *scanError) Unwrap() error { return e.err }

// runRow is one row of the table.
type runRow struct {
	id       int64
	job      sql.NullString
	started  sql.NullTime
	finished sql.NullTime
	status   sql.NullString
	host     sql.NullString
	pid      sql.NullInt64
	runID    sql.NullString // when the table has run_id
	output   sql.NullString // the end of output, when the table has it
}

func (m *Source) query(ctx context.Context, db *sql.DB, where string, args ...any) ([]runRow, error) {
	list, runID, output := m.selectList, m.hasRunID.Load(), m.hasOutput.Load()
	if runID {
		list += ", " + quoteIdent(jobruns.ColumnRunID)
	}
	if output {
		// Its end only, however long it is: RIGHT counts characters, so
		// at most 4 bytes each cross the wire, cut to bytes below.
		list += fmt.Sprintf(", RIGHT(%s, %d)", quoteIdent(jobruns.ColumnOutput), model.OutputExcerpt)
	}
	rows, err := db.QueryContext(ctx, "SELECT "+list+" FROM "+m.table+" "+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []runRow
	for rows.Next() {
		var r runRow
		dst := []any{&r.id, &r.job, &r.started, &r.finished, &r.status, &r.host, &r.pid}
		if runID {
			dst = append(dst, &r.runID)
		}
		if output {
			dst = append(dst, &r.output)
		}
		if err := rows.Scan(dst...); err != nil {
			return nil, &scanError{err}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (m *Source) maxID(ctx context.Context, db *sql.DB) (int64, error) {
	var id sql.NullInt64
	err := db.QueryRowContext(ctx, "SELECT MAX("+m.q["id"]+") FROM "+m.table).Scan(&id)
	return id.Int64, err
}

// capOpen bounds the runs in progress re-read by id every poll to
// model.MaxOpenRuns for each configured job (a table shared by a fleet has
// a run in progress of many jobs at once), forgetting the oldest (the
// lowest ids): their end will not be seen, and the model closes them as lost
// at their job's timeout. It leaves p.Open sorted.
func (m *Source) capOpen(p *mysqlPosition) {
	open := make(model.InFlight[int64, openID], len(p.Open))
	for _, id := range p.Open {
		open[id] = openID(id)
	}
	limit := model.MaxOpenRuns * max(len(m.jobs), 1)
	if drop := open.TrimTo(limit); drop > 0 {
		m.log.Warn("too many runs in progress to follow; forgetting the oldest", "dropped", drop, "limit", limit)
	}
	p.Open = p.Open[:0]
	for _, id := range open.Sorted() {
		p.Open = append(p.Open, int64(id))
	}
}

// openID is the id of a row read in progress; a lower id is an older run.
type openID int64

func (a openID) Before(b openID) bool { return a < b }

func (m *Source) class(s sql.NullString) statusClass {
	if !s.Valid {
		return statusUnknown
	}
	return m.status[strings.ToLower(strings.TrimSpace(s.String))]
}

// rowEvents turns a row into events. started says its Start was emitted
// already. open says the run is in progress (to be re-read).
func (m *Source) rowEvents(r runRow, started bool) (evs []keyedEvent, open bool, err error) {
	job := strings.TrimSpace(r.job.String)
	if job == "" {
		return nil, false, errors.New("empty job name")
	}
	base := model.Event{Job: job, Host: r.host.String, RunID: fmt.Sprintf("%s:%d", m.name, r.id)}
	if id := strings.TrimSpace(r.runID.String); id != "" {
		// The run's own id (a check-in's ?rid=): the same run whichever
		// replica, or source, reports it.
		base.RunID = id
	}
	if r.pid.Valid && r.pid.Int64 > 0 && r.pid.Int64 <= math.MaxInt32 {
		base.PID = int(r.pid.Int64)
	}
	validTime := func(t sql.NullTime) bool { return t.Valid && !t.Time.IsZero() }
	class := m.class(r.status)
	if class == statusSkipped {
		e := base
		e.Kind = model.Skip
		switch {
		case validTime(r.started):
			e.Time = r.started.Time
		case validTime(r.finished):
			e.Time = r.finished.Time
		default:
			return nil, false, errors.New("skipped row without time")
		}
		return []keyedEvent{{e.Time, e}}, false, nil
	}
	if !validTime(r.started) {
		return nil, false, fmt.Errorf("no %s", m.cols.StartedAt)
	}
	start := base
	start.Kind, start.Time = model.Start, r.started.Time
	if !validTime(r.finished) {
		if started {
			return nil, true, nil
		}
		return []keyedEvent{{start.Time, start}}, true, nil
	}
	var res model.Result
	switch class {
	case statusSuccess:
		res = model.Success
	case statusFailure:
		res = model.Failure
	case statusTimeout:
		res = model.Timeout
	default:
		// A finished run whose result cannot be told: counted as a parse
		// error; if its Start was emitted, the model closes it as lost.
		return nil, false, fmt.Errorf("finished with unknown %s %q", m.cols.Status, r.status.String)
	}
	if !started {
		evs = append(evs, keyedEvent{start.Time, start})
	}
	e := base
	e.Kind, e.Time, e.Result = model.End, r.finished.Time, res
	e.Output = model.OutputTail(r.output.String, model.OutputExcerpt)
	if d := r.finished.Time.Sub(r.started.Time); d >= 0 {
		e.Duration, e.HasDuration = d, true
	}
	// An End sorts no earlier than its Start, whatever the clocks said.
	evs = append(evs, keyedEvent{maxTime(e.Time, r.started.Time), e})
	return evs, false, nil
}

type keyedEvent struct {
	at time.Time
	ev model.Event
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// sortEvents orders a poll's events by time, so that runs overlapping on
// several hosts are seen overlapping whatever their ids.
func sortEvents(k []keyedEvent) []model.Event {
	slices.SortStableFunc(k, func(a, b keyedEvent) int { return a.at.Compare(b.at) })
	out := make([]model.Event, len(k))
	for i := range k {
		out[i] = k[i].ev
	}
	return out
}
