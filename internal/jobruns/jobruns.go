// Package jobruns writes runs into a job_runs table (examples/job_runs.sql,
// the mysql source's default columns): what `jobwatch run --record-mysql`
// and the check-in receiver's `store: mysql` both write, with one set of
// statements. It is a leaf: it knows SQL, not jobwatch's model.
package jobruns

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// tableRE is a table name, optionally database.table: plain identifiers,
// quoted in the statements, so a name cannot inject SQL.
var tableRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]{0,63}(\.[A-Za-z_$][A-Za-z0-9_$]{0,63})?$`)
})

// StatusSkipped is the status of a skipped run's row.
const StatusSkipped = "skipped"

// Table is a job_runs table and which of its optional columns it has.
type Table struct {
	Schema string // "" for the DSN's database
	Name   string
	quoted string
	// The optional columns, once Probe has run.
	ExitCode, RunID, Output bool
}

// ParseTable validates a table name (plain identifiers, optionally
// database.table) and quotes it for the statements.
func ParseTable(name string) (*Table, error) {
	if !tableRE().MatchString(name) {
		return nil, fmt.Errorf("table %q: must be a plain identifier (letters, digits, _ and $, at most 64), or database.table", name)
	}
	t := &Table{Name: name}
	if s, n, ok := strings.Cut(name, "."); ok {
		t.Schema, t.Name = s, n
	}
	parts := strings.Split(name, ".")
	for i := range parts {
		parts[i] = "`" + parts[i] + "`"
	}
	t.quoted = strings.Join(parts, ".")
	return t, nil
}

// Quoted is the table's name as the statements write it.
func (t *Table) Quoted() string { return t.quoted }

// Querier runs a query: a *sql.DB or a *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// Execer runs a statement: a *sql.DB or a *sql.Tx.
type Execer interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

// The optional columns: a run's own id, its exit code and its output.
const (
	ColumnRunID    = "run_id"
	ColumnExitCode = "exit_code"
	ColumnOutput   = "output"
)

// requiredColumns are the columns the statements write (examples/job_runs.sql).
var requiredColumns = []string{"id", "job_name", "started_at", "finished_at", "status", "host", "pid"}

// Column is a column of the table as information_schema describes it.
type Column struct {
	Type string // DATA_TYPE, lower-cased
	Key  string // COLUMN_KEY: PRI, UNI, MUL or ""
}

// Columns reads the table's columns, by lower-cased name: none when the
// table does not exist or the user may not see it. It is the one reader
// of information_schema.COLUMNS for a job_runs table, the writers' and
// the mysql source's.
func (t *Table) Columns(ctx context.Context, q Querier) (map[string]Column, error) {
	rows, err := q.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_KEY FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?`, t.Schema, t.Name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]Column{}
	for rows.Next() {
		var name, typ, key string
		if err := rows.Scan(&name, &typ, &key); err != nil {
			return nil, err
		}
		have[strings.ToLower(name)] = Column{strings.ToLower(typ), key}
	}
	return have, rows.Err()
}

// Index is one of the table's indexes.
type Index struct {
	Unique  bool
	Columns []string // lower-cased, in the index's order
}

// Indexes reads the table's indexes by name, the one reader of
// information_schema.STATISTICS for a job_runs table.
func (t *Table) Indexes(ctx context.Context, q Querier) (map[string]Index, error) {
	rows, err := q.QueryContext(ctx, `SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?
ORDER BY INDEX_NAME, SEQ_IN_INDEX`, t.Schema, t.Name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	idx := map[string]Index{}
	for rows.Next() {
		var name, col string
		var nonUnique int
		if err := rows.Scan(&name, &nonUnique, &col); err != nil {
			return nil, err
		}
		ix := idx[name]
		ix.Unique = nonUnique == 0
		ix.Columns = append(ix.Columns, strings.ToLower(col))
		idx[name] = ix
	}
	return idx, rows.Err()
}

// Probe reads which of the optional columns (exit_code, run_id, output)
// the table has.
func (t *Table) Probe(ctx context.Context, q Querier) error {
	have, err := t.Columns(ctx, q)
	if err != nil {
		return err
	}
	t.setOptional(have)
	return nil
}

func (t *Table) setOptional(have map[string]Column) {
	_, t.ExitCode = have[ColumnExitCode]
	_, t.RunID = have[ColumnRunID]
	_, t.Output = have[ColumnOutput]
}

// HasRunIDKey reports whether the table has a unique key on (job_name,
// run_id), which makes a run id's rows idempotent.
func (t *Table) HasRunIDKey(ctx context.Context, q Querier) (bool, error) {
	idx, err := t.Indexes(ctx, q)
	if err != nil {
		return false, err
	}
	for _, ix := range idx {
		if ix.Unique && slices.Equal(ix.Columns, []string{"job_name", ColumnRunID}) {
			return true, nil
		}
	}
	return false, nil
}

// SchemaError is a table that is not as a check-in store needs it.
type SchemaError struct{ Msg string }

func (e *SchemaError) Error() string { return e.Msg }

// ProbeKeyed is the check-in store's (store: mysql) probe: the table
// exists, with the columns the statements write and the run_id column
// with its unique key on (job_name, run_id), which make a retried
// check-in one row; then which optional columns it has, as Probe. What
// the table lacks is a *SchemaError.
func (t *Table) ProbeKeyed(ctx context.Context, q Querier) error {
	have, err := t.Columns(ctx, q)
	if err != nil {
		return err
	}
	if len(have) == 0 {
		return &SchemaError{fmt.Sprintf("table %s does not exist (or the user may not see it): create it from examples/job_runs.sql", t.Name)}
	}
	var missing []string
	for _, c := range requiredColumns {
		if _, ok := have[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return &SchemaError{fmt.Sprintf("table %s has no column %s (see examples/job_runs.sql)", t.Name, strings.Join(missing, ", "))}
	}
	t.setOptional(have)
	keyed := false
	if t.RunID {
		if keyed, err = t.HasRunIDKey(ctx, q); err != nil {
			return err
		}
	}
	if !keyed {
		what := "no run_id column"
		if t.RunID {
			what = "a run_id column but no unique key (job_name, run_id)"
		}
		return &SchemaError{fmt.Sprintf("table %s has %s: check-ins are refused, as a retried one would not be idempotent (it could count twice); see docs/mysql.md for the ALTER TABLE", t.Name, what)}
	}
	return nil
}

// Run is what a row says of a run.
type Run struct {
	Job, Host string
	PID       int
	// RunID, when set and the table has a run_id column, identifies the
	// run: a row with the same job and run id is never inserted twice.
	RunID             string
	Started, Finished time.Time
	Status            string // "" in progress
	ExitCode          *int
	Output            string
}

// columns are the row's columns and values that the table has.
func (t *Table) columns(r Run, finished bool) (cols []string, args []any) {
	cols = []string{"job_name", "started_at", "host", "pid"}
	args = []any{r.Job, r.Started.UTC(), r.Host, r.PID}
	if t.RunID && r.RunID != "" {
		cols, args = append(cols, "run_id"), append(args, r.RunID)
	}
	if !finished {
		return cols, args
	}
	cols, args = append(cols, "finished_at", "status"), append(args, r.Finished.UTC(), r.Status)
	return t.endColumns(cols, args, r)
}

// endColumns adds the exit code and output, where the table has them.
func (t *Table) endColumns(cols []string, args []any, r Run) ([]string, []any) {
	if t.ExitCode && r.ExitCode != nil && r.Status != StatusSkipped {
		cols, args = append(cols, "exit_code"), append(args, *r.ExitCode)
	}
	if t.Output && r.Output != "" {
		cols, args = append(cols, "output"), append(args, r.Output)
	}
	return cols, args
}

// insert inserts a row; one whose job and run id are there already is
// left as it is (a retry).
func (t *Table) insert(ctx context.Context, ex Execer, cols []string, args []any) (sql.Result, error) {
	q := "INSERT INTO " + t.quoted + " (" + strings.Join(cols, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(cols)-1) + ")"
	if t.RunID {
		q += " ON DUPLICATE KEY UPDATE id = id"
	}
	return ex.ExecContext(ctx, q, args...)
}

// InsertStart inserts a run in progress (finished_at NULL) and returns its
// row's id (0 for a retry of a run id already there).
func (t *Table) InsertStart(ctx context.Context, ex Execer, r Run) (int64, error) {
	cols, args := t.columns(r, false)
	res, err := t.insert(ctx, ex, cols, args)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// InsertFinished inserts a whole run as one finished row: a skip, a run
// whose start was missed.
func (t *Table) InsertFinished(ctx context.Context, ex Execer, r Run) error {
	cols, args := t.columns(r, true)
	_, err := t.insert(ctx, ex, cols, args)
	return err
}

// FinishID finishes the run in progress of row id.
func (t *Table) FinishID(ctx context.Context, ex Execer, id int64, r Run) error {
	_, err := t.update(ctx, ex, r, "id = ?", id)
	return err
}

// Finish finishes r's run in progress: the row of its run id, else (no
// run id) the newest row in progress of its job and host with none; when
// there is none, the run is inserted as one finished row (a run id's row
// already finished is left as it is: a retry).
func (t *Table) Finish(ctx context.Context, ex Execer, r Run) error {
	var n int64
	var err error
	switch {
	case t.RunID && r.RunID != "":
		n, err = t.update(ctx, ex, r, "job_name = ? AND run_id = ? AND finished_at IS NULL", r.Job, r.RunID)
	case t.RunID:
		n, err = t.update(ctx, ex, r, "job_name = ? AND host = ? AND run_id IS NULL AND finished_at IS NULL ORDER BY id DESC LIMIT 1", r.Job, r.Host)
	default:
		n, err = t.update(ctx, ex, r, "job_name = ? AND host = ? AND finished_at IS NULL ORDER BY id DESC LIMIT 1", r.Job, r.Host)
	}
	if err != nil || n > 0 {
		return err
	}
	r.Started = r.Finished
	return t.InsertFinished(ctx, ex, r)
}

// update sets a row's end where it matches, returning the rows changed.
func (t *Table) update(ctx context.Context, ex Execer, r Run, where string, whereArgs ...any) (int64, error) {
	cols, args := t.endColumns([]string{"finished_at", "status"}, []any{r.Finished.UTC(), r.Status}, r)
	for i := range cols {
		cols[i] += " = ?"
	}
	res, err := ex.ExecContext(ctx, "UPDATE "+t.quoted+" SET "+strings.Join(cols, ", ")+" WHERE "+where, append(args, whereArgs...)...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Upsert writes runs that each have a run id in one statement: a run not
// in the table yet is inserted as it is (in progress, or finished); one
// whose row is in progress takes the run's end, if it has one; one whose
// row is finished is left as it is (a retry). The table must have run_id
// and its unique key on (job_name, run_id).
func (t *Table) Upsert(ctx context.Context, ex Execer, runs []Run) error {
	if len(runs) == 0 {
		return nil
	}
	if !t.RunID {
		return fmt.Errorf("table %s has no run_id column", t.Name)
	}
	cols := []string{"job_name", "run_id", "started_at", "host", "pid", "status", "finished_at"}
	if t.ExitCode {
		cols = append(cols, "exit_code")
	}
	if t.Output {
		cols = append(cols, "output")
	}
	row := "(?" + strings.Repeat(", ?", len(cols)-1) + ")"
	args := make([]any, 0, len(runs)*len(cols))
	for _, r := range runs {
		args = append(args, t.upsertValues(r)...)
	}
	// Assignments run left to right: finished_at, which each of them
	// tests, is set last.
	var set []string
	for _, c := range append(cols[7:], "status", "finished_at") {
		set = append(set, fmt.Sprintf("%s = IF(finished_at IS NULL, VALUES(%s), %s)", c, c, c))
	}
	q := "INSERT INTO " + t.quoted + " (" + strings.Join(cols, ", ") + ") VALUES " + row + strings.Repeat(", "+row, len(runs)-1) +
		" ON DUPLICATE KEY UPDATE " + strings.Join(set, ", ")
	_, err := ex.ExecContext(ctx, q, args...)
	return err
}

// upsertValues are r's values in Upsert's columns; NULL for what r has not.
func (t *Table) upsertValues(r Run) []any {
	v := []any{r.Job, r.RunID, r.Started.UTC(), r.Host, r.PID, nil, nil}
	if r.Status != "" {
		v[5], v[6] = r.Status, r.Finished.UTC()
	}
	if t.ExitCode {
		var code any
		if r.ExitCode != nil && r.Status != StatusSkipped {
			code = *r.ExitCode
		}
		v = append(v, code)
	}
	if t.Output {
		var out any
		if r.Output != "" {
			out = r.Output
		}
		v = append(v, out)
	}
	return v
}
