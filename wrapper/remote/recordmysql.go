package remote

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/jobwatch/jobwatch/internal/secret"
	"github.com/jobwatch/jobwatch/wrapper"
)

// tableRE is a table name, optionally database.table: plain identifiers,
// quoted in the statements, so a flag cannot inject SQL.
var tableRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]{0,63}(\.[A-Za-z_$][A-Za-z0-9_$]{0,63})?$`)
})

// runTable writes a run into a job_runs table (the mysql source's default
// columns): one row inserted at start with finished_at NULL, updated at the
// end; a skip, or a run that could not start, is one finished row. A server
// that cannot be reached never stops the job: the caller says on stderr
// that the table missed the record.
type runTable struct {
	cfg      *mysql.Config
	schema   string // "" for the DSN's database
	table    string
	quoted   string
	red      *secret.Redactor
	db       *sql.DB
	exitCode bool  // the table has an exit_code column
	probed   bool  // exitCode is known
	id       int64 // the run's row, once inserted
}

// recordTimeout bounds each write to the table, so that a server that does
// not answer delays the wrapper's exit by this much at most.
const recordTimeout = 5 * time.Second

func newRunTable(cfg *mysql.Config, table string, red *secret.Redactor) (*runTable, error) {
	if !tableRE().MatchString(table) {
		return nil, fmt.Errorf("--record-table %q: must be a plain identifier (letters, digits, _ and $, at most 64), or database.table", table)
	}
	t := &runTable{cfg: cfg, table: table, red: red}
	var parts []string
	for _, p := range strings.Split(table, ".") {
		parts = append(parts, "`"+p+"`")
	}
	t.quoted = strings.Join(parts, ".")
	if s, name, ok := strings.Cut(table, "."); ok {
		t.schema, t.table = s, name
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, red.Err(fmt.Errorf("--record-mysql: %w", err))
	}
	t.db = sql.OpenDB(c)
	t.db.SetMaxOpenConns(1)
	return t, nil
}

// probe finds out once whether the table has an exit_code column.
func (t *runTable) probe(ctx context.Context) error {
	if t.probed {
		return nil
	}
	var n int
	err := t.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND COLUMN_NAME = 'exit_code'`,
		t.schema, t.table).Scan(&n)
	if err != nil {
		return err
	}
	t.exitCode, t.probed = n > 0, true
	return nil
}

func (t *runTable) exec(what string, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	err := t.probe(ctx)
	if err == nil {
		err = f(ctx)
	}
	if err != nil {
		return t.red.Err(fmt.Errorf("table %s on %s missed the %s record: %w", t.table, t.cfg.Addr, what, err))
	}
	return nil
}

// start inserts the run's row, in progress.
func (t *runTable) Start(job, host string, pid int, at time.Time) error {
	return t.exec("start", func(ctx context.Context) error {
		res, err := t.db.ExecContext(ctx, "INSERT INTO "+t.quoted+" (job_name, started_at, host, pid) VALUES (?, ?, ?, ?)",
			job, at.UTC(), host, pid)
		if err != nil {
			return err
		}
		t.id, err = res.LastInsertId()
		return err
	})
}

// end finishes the run's row; when the start was missed it inserts the
// whole run as one finished row.
func (t *runTable) End(job, host string, pid int, started, finished time.Time, status string, code int) error {
	return t.exec("end", func(ctx context.Context) error {
		if t.id == 0 {
			return t.insertFinished(ctx, job, host, pid, started, finished, status, code)
		}
		q := "UPDATE " + t.quoted + " SET finished_at = ?, status = ?"
		args := []any{finished.UTC(), status}
		if t.exitCode {
			q += ", exit_code = ?"
			args = append(args, code)
		}
		_, err := t.db.ExecContext(ctx, q+" WHERE id = ?", append(args, t.id)...)
		return err
	})
}

// finished records a run that never had a row in progress: a skip, or a
// run that could not start.
func (t *runTable) Finished(what, job, host string, pid int, at time.Time, status string, code int) error {
	return t.exec(what, func(ctx context.Context) error {
		return t.insertFinished(ctx, job, host, pid, at, at, status, code)
	})
}

func (t *runTable) insertFinished(ctx context.Context, job, host string, pid int, started, finished time.Time, status string, code int) error {
	cols := "job_name, started_at, finished_at, status, host, pid"
	marks := "?, ?, ?, ?, ?, ?"
	args := []any{job, started.UTC(), finished.UTC(), status, host, pid}
	if t.exitCode && status != wrapper.StatusSkipped {
		cols += ", exit_code"
		marks += ", ?"
		args = append(args, code)
	}
	_, err := t.db.ExecContext(ctx, "INSERT INTO "+t.quoted+" ("+cols+") VALUES ("+marks+")", args...)
	return err
}

func (t *runTable) Close() { t.db.Close() }
