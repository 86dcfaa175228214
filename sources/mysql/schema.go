package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/jobwatch/jobwatch/internal/jobruns"
)

// schemaError is a table or column that is not as the config says. Its
// reason is stable across polls, so the source logs it once.
type schemaError struct {
	reason string // "table missing", "column missing", "column type", "no database"
	msg    string
}

func (e *schemaError) Error() string { return e.msg }

var (
	intTypes  = []string{"tinyint", "smallint", "mediumint", "int", "integer", "bigint"}
	textTypes = []string{"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "binary", "varbinary"}
	timeTypes = []string{"datetime", "timestamp"}
)

// columnTypes are the DATA_TYPEs each column may have.
func (m *Source) columnTypes() []struct {
	key, name string
	types     []string
} {
	c := m.cols
	return []struct {
		key, name string
		types     []string
	}{
		{"id", c.ID, intTypes},
		{"job", c.Job, textTypes},
		{"started_at", c.StartedAt, timeTypes},
		{"finished_at", c.FinishedAt, timeTypes},
		{"status", c.Status, textTypes},
		{"host", c.Host, textTypes},
		{"pid", c.PID, intTypes},
	}
}

// checkSchema checks that the table exists with the configured columns, of
// usable types, that id is indexed, and that jobwatch's user may read it.
// It returns which of the first start's look-ups have an index.
func (m *Source) checkSchema(ctx context.Context, db *sql.DB) (plan indexPlan, err error) {
	schema, err := m.schemaName(ctx, db)
	if err != nil {
		return plan, err
	}
	have, err := m.tableColumns(ctx, db, schema)
	if err != nil {
		return plan, err
	}
	if len(have) == 0 {
		return plan, &schemaError{"table missing", fmt.Sprintf("table %s.%s does not exist (or jobwatch's user may not read it)", schema, m.tableName)}
	}
	if err := m.checkColumns(have, schema); err != nil {
		return plan, err
	}
	_, runID := have[jobruns.ColumnRunID]
	m.hasRunID.Store(runID && !m.configured(jobruns.ColumnRunID))
	_, output := have[jobruns.ColumnOutput]
	m.hasOutput.Store(output && !m.configured(jobruns.ColumnOutput))
	// The columns exist and have usable types: make sure the user may
	// SELECT them (information_schema may show columns it may not read).
	rows, err := db.QueryContext(ctx, "SELECT "+m.selectList+" FROM "+m.table+" LIMIT 0")
	if err != nil {
		return plan, err
	}
	rows.Close()
	return m.indexes(ctx, db, schema)
}

// configured says a configured column has that name (lower-cased).
func (m *Source) configured(name string) bool {
	for _, kv := range m.cols.NamedColumns() {
		if strings.EqualFold(kv[1], name) {
			return true
		}
	}
	return false
}

// schemaName is the table's database: the configured one, else the DSN's.
func (m *Source) schemaName(ctx context.Context, db *sql.DB) (string, error) {
	if m.schema != "" {
		return m.schema, nil
	}
	var cur sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&cur); err != nil {
		return "", err
	}
	if !cur.Valid {
		return "", &schemaError{"no database", "no database selected: name one in the dsn (.../dbname) or write table as database.table"}
	}
	return cur.String, nil
}

// tableColumns are the table's columns by lower-cased name, none if the
// table does not exist or the user may not see it.
func (m *Source) tableColumns(ctx context.Context, db *sql.DB, schema string) (map[string]jobruns.Column, error) {
	t := *m.jt
	t.Schema = schema
	return t.Columns(ctx, db)
}

// checkColumns checks that each configured column is in have, of a usable
// type, and id indexed.
func (m *Source) checkColumns(have map[string]jobruns.Column, schema string) error {
	var missing, wrong []string
	for _, c := range m.columnTypes() {
		info, ok := have[strings.ToLower(c.name)]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("columns.%s: column %q not in table %s.%s", c.key, c.name, schema, m.tableName))
		case !slices.Contains(c.types, info.Type):
			wrong = append(wrong, fmt.Sprintf("columns.%s: column %q is %s, want one of %s", c.key, c.name, strings.ToUpper(info.Type), strings.ToUpper(strings.Join(c.types, ", "))))
		case c.key == "id" && info.Key == "":
			wrong = append(wrong, fmt.Sprintf("columns.id: column %q has no index (make it the AUTO_INCREMENT primary key)", c.name))
		}
	}
	if len(missing) > 0 {
		return &schemaError{"column missing", strings.Join(append(missing, wrong...), "; ")}
	}
	if len(wrong) > 0 {
		return &schemaError{"column type", strings.Join(wrong, "; ")}
	}
	return nil
}

// indexPlan says which of the first start's look-ups have an index to run
// on, from the table's indexes (information_schema.STATISTICS): a look-up
// without one reads back only from the highest id (mysqlBootstrapWindow
// rows), never the whole table.
type indexPlan struct {
	// byStatus: an index starts (job, status, finished_at). Each job's
	// last success, failure and timeout are one row each.
	byStatus bool
	// byFinished: an index starts (job, finished_at). Without byStatus each
	// job's finished runs are walked back from the newest (at most
	// mysqlBootstrapWalk rows a job) until each result is found; and each
	// job's runs in progress (finished_at IS NULL) are one range.
	byFinished bool
	// openSorted: that index goes on with started_at, so that the runs in
	// progress come newest first without sorting them.
	openSorted bool
}

// window says whether the first start reads back from the highest id: some
// look-up has no index.
func (p indexPlan) window() bool { return !p.byFinished }

// missing returns the CREATE INDEX statements of examples/job_runs.sql that
// the table lacks, and whether lacking them bounds what the first start
// finds (a warning) rather than only costing more reads (advice).
func (p indexPlan) missing(c Columns, table string) (stmts []string, bounded bool) {
	if !p.byStatus {
		stmts = append(stmts, fmt.Sprintf("CREATE INDEX job_status_finished ON %s (%s, %s, %s)", table, c.Job, c.Status, c.FinishedAt))
	}
	if !p.openSorted {
		stmts = append(stmts, fmt.Sprintf("CREATE INDEX job_open ON %s (%s, %s, %s)", table, c.Job, c.FinishedAt, c.StartedAt))
	}
	return stmts, p.window()
}

// indexWarning is check-config's warning for a table the first start cannot
// look up by job, or "".
func (m *Source) indexWarning(p indexPlan) string {
	stmts, bounded := p.missing(m.cols, m.table)
	if !bounded {
		return ""
	}
	what := "runs in progress"
	if !p.byStatus {
		what = "last success, failure and timeout and its runs in progress"
	}
	return fmt.Sprintf("table %s has no index to look up each job's %s on first start: they are looked for only among the last %d rows; create %s",
		m.table, what, mysqlBootstrapWindow, strings.Join(stmts, "; "))
}

// indexes reads which of the first start's look-ups the table's indexes
// serve.
func (m *Source) indexes(ctx context.Context, db *sql.DB, schema string) (indexPlan, error) {
	t := *m.jt
	t.Schema = schema
	idx, err := t.Indexes(ctx, db)
	if err != nil {
		return indexPlan{}, err
	}
	hasPrefix := func(cols ...string) bool {
		for _, ix := range idx {
			ic := ix.Columns
			if len(ic) < len(cols) {
				continue
			}
			ok := true
			for i, c := range cols {
				ok = ok && ic[i] == strings.ToLower(c)
			}
			if ok {
				return true
			}
		}
		return false
	}
	c := m.cols
	return indexPlan{
		byStatus:   hasPrefix(c.Job, c.Status, c.FinishedAt),
		byFinished: hasPrefix(c.Job, c.FinishedAt),
		openSorted: hasPrefix(c.Job, c.FinishedAt, c.StartedAt),
	}, nil
}
