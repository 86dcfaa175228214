package remote

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/jobwatch/jobwatch/internal/jobruns"
	"github.com/jobwatch/jobwatch/internal/secret"
)

// runTable writes a run into a job_runs table (the mysql source's default
// columns): one row inserted at start with finished_at NULL, updated at the
// end; a skip, or a run that could not start, is one finished row. A server
// that cannot be reached never stops the job: the caller says on stderr
// that the table missed the record.
type runTable struct {
	cfg    *mysql.Config
	t      *jobruns.Table
	red    *secret.Redactor
	db     *sql.DB
	probed bool  // the table's optional columns are known
	id     int64 // the run's row, once inserted
}

// recordTimeout bounds each write to the table, so that a server that does
// not answer delays the wrapper's exit by this much at most.
const recordTimeout = 5 * time.Second

func newRunTable(cfg *mysql.Config, table string, red *secret.Redactor) (*runTable, error) {
	jt, err := jobruns.ParseTable(table)
	if err != nil {
		return nil, fmt.Errorf("--record-%w", err)
	}
	t := &runTable{cfg: cfg, t: jt, red: red}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, red.Err(fmt.Errorf("--record-mysql: %w", err))
	}
	t.db = sql.OpenDB(c)
	t.db.SetMaxOpenConns(1)
	return t, nil
}

// probe finds out once which optional columns the table has.
func (t *runTable) probe(ctx context.Context) error {
	if t.probed {
		return nil
	}
	if err := t.t.Probe(ctx, t.db); err != nil {
		return err
	}
	t.probed = true
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
		return t.red.Err(fmt.Errorf("table %s on %s missed the %s record: %w", t.t.Name, t.cfg.Addr, what, err))
	}
	return nil
}

// start inserts the run's row, in progress.
func (t *runTable) Start(job, host string, pid int, at time.Time) error {
	return t.exec("start", func(ctx context.Context) error {
		id, err := t.t.InsertStart(ctx, t.db, jobruns.Run{Job: job, Host: host, PID: pid, Started: at})
		t.id = id
		return err
	})
}

// end finishes the run's row; when the start was missed it inserts the
// whole run as one finished row.
func (t *runTable) End(job, host string, pid int, started, finished time.Time, status string, code int) error {
	return t.exec("end", func(ctx context.Context) error {
		r := jobruns.Run{Job: job, Host: host, PID: pid, Started: started, Finished: finished, Status: status, ExitCode: &code}
		if t.id == 0 {
			return t.t.InsertFinished(ctx, t.db, r)
		}
		return t.t.FinishID(ctx, t.db, t.id, r)
	})
}

// finished records a run that never had a row in progress: a skip, or a
// run that could not start.
func (t *runTable) Finished(what, job, host string, pid int, at time.Time, status string, code int) error {
	return t.exec(what, func(ctx context.Context) error {
		return t.t.InsertFinished(ctx, t.db, jobruns.Run{Job: job, Host: host, PID: pid, Started: at, Finished: at, Status: status, ExitCode: &code})
	})
}

func (t *runTable) Close() { t.db.Close() }
