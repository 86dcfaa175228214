package checkin

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/jobwatch/jobwatch/internal/jobruns"
	"github.com/jobwatch/jobwatch/internal/secret"
	"github.com/jobwatch/jobwatch/sources"
)

// A tableStore keeps check-ins as rows of a shared job_runs table (store:
// mysql), so that replicas behind a load balancer share them: each
// replica's mysql source reads the table back, and none applies its own
// check-ins locally. Concurrent check-ins share one transaction (group
// commit), as they share the spool's fsync; each is answered once its
// transaction has committed. The table's unique key on (job_name, run_id)
// makes a retry, on this replica or another, a no-op.
type tableStore struct {
	db  *sql.DB
	t   *jobruns.Table
	red *secret.Redactor
	log *slog.Logger
	// key is what the store was opened from, to reopen it when a reload
	// changes it.
	key string

	probeMu sync.Mutex
	probed  bool // the table has what the store needs

	mu      sync.Mutex
	pending []*pendingCheckin
	closed  bool
	// single makes each check-in its own transaction, on its own
	// connection, with no group commit: the benchmark's baseline.
	single bool
	kick   chan struct{}
	done   chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// pendingCheckin is a check-in waiting for its transaction.
type pendingCheckin struct {
	rec spoolRecord
	// ctx is done once its request has been answered 503 for want of a
	// commit: a check-in still waiting then is not written at all.
	ctx  context.Context
	done chan struct{}
	err  error
}

// Bounds of the table store.
const (
	// saveTimeout bounds the wait for a check-in's commit: a database down
	// or hung answers 503 well within 5 s, and the client retries.
	saveTimeout = 4 * time.Second
	// txTimeout bounds one transaction, a little less than saveTimeout so
	// that a commit's outcome is known before its check-ins give up.
	txTimeout = 3500 * time.Millisecond
	// groupRows bounds the check-ins of one transaction.
	groupRows = 256
	// dialTimeout bounds connecting, and each read and write, unless the
	// DSN sets its own.
	dialTimeout = 3 * time.Second
)

var errStoreClosed = errors.New("check-in store is closed")

// openTableStore reads the DSN and starts the committer; nothing is dialled.
func openTableStore(dsn, dsnFile, table string, log *slog.Logger) (*tableStore, error) {
	t, c, red, err := loadStore(dsn, dsnFile, table, log)
	if err != nil {
		return nil, fmt.Errorf("checkins: %w", err)
	}
	s := &tableStore{db: sql.OpenDB(c), t: t, red: red, log: log, key: storeKey(dsn, dsnFile, table),
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	go s.committer()
	return s, nil
}

// loadStore parses the table and reads the DSN of store: mysql; nothing
// is dialled. Its errors are the checkins block's, without its name.
func loadStore(dsn, dsnFile, table string, log *slog.Logger) (*jobruns.Table, driver.Connector, *secret.Redactor, error) {
	t, err := jobruns.ParseTable(table)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, red, err := secret.LoadMySQL(secret.MySQL{DSN: dsn, File: dsnFile, DSNName: "mysql_dsn", FileName: "mysql_dsn_file", Timeout: dialTimeout}, log)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, nil, red.Err(fmt.Errorf("mysql_dsn: %w", err))
	}
	return t, c, red, nil
}

// checkStore is check-config's look at store: mysql's table: the check
// the store makes before its first write (jobruns.ProbeKeyed). A server
// that cannot be reached is an error wrapping sources.ErrUnreachable; one
// that answers and refuses (a wrong password, an unknown database) is an
// error.
func checkStore(ctx context.Context, c Config) error {
	t, conn, red, err := loadStore(c.MySQLDSN, c.MySQLDSNFile, c.Table, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		if !errors.As(err, new(*mysql.MySQLError)) {
			err = fmt.Errorf("database %w: %w", sources.ErrUnreachable, err)
		}
		return red.Err(fmt.Errorf("table %s: %w", t.Name, err))
	}
	if err := t.ProbeKeyed(ctx, db); err != nil {
		return red.Err(err)
	}
	return nil
}

func storeKey(dsn, dsnFile, table string) string { return dsn + "\x00" + dsnFile + "\x00" + table }

// Save stores rec and returns once its transaction has committed, or the
// error that keeps it from being acknowledged.
func (s *tableStore) Save(ctx context.Context, rec spoolRecord) error {
	ctx, cancel := context.WithTimeout(ctx, saveTimeout)
	defer cancel()
	p := &pendingCheckin{rec: rec, ctx: ctx, done: make(chan struct{})}
	if s.single {
		s.commitGroup([]*pendingCheckin{p})
		return p.err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errStoreClosed
	}
	s.pending = append(s.pending, p)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a commit is already due
	}
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		// Its transaction may still commit: the client's retry, with a
		// run id, is then a no-op.
		return fmt.Errorf("check-in not committed within %s: %w", saveTimeout, ctx.Err())
	}
}

// committer commits the pending check-ins, a group at a time: those that
// come while a transaction runs join the next one.
func (s *tableStore) committer() {
	defer close(s.done)
	for range s.kick {
		for {
			s.mu.Lock()
			n := min(len(s.pending), groupRows)
			group := s.pending[:n:n]
			s.pending = s.pending[n:]
			s.mu.Unlock()
			if n == 0 {
				break
			}
			if group = s.live(group); len(group) > 0 {
				s.commitGroup(group)
			}
		}
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return
		}
	}
}

// live drops the check-ins already answered 503 (they waited out a
// database that hung): written now, a client's retry of one without a run
// id would count it twice.
func (s *tableStore) live(group []*pendingCheckin) []*pendingCheckin {
	out := group[:0]
	for _, p := range group {
		if err := p.ctx.Err(); err != nil {
			p.err = err
			close(p.done)
			continue
		}
		out = append(out, p)
	}
	return out
}

// commitGroup writes a group in one transaction. When the server refuses
// it (a deadlock with another replica, a value the table cannot take),
// each check-in is tried alone, so that one bad row fails only itself.
func (s *tableStore) commitGroup(group []*pendingCheckin) {
	err := s.commit(group)
	var me *mysql.MySQLError
	if err != nil && len(group) > 1 && errors.As(err, &me) {
		for _, p := range group {
			s.settle([]*pendingCheckin{p}, s.commit([]*pendingCheckin{p}))
		}
		return
	}
	s.settle(group, err)
}

func (s *tableStore) settle(group []*pendingCheckin, err error) {
	if err != nil {
		err = s.red.Err(fmt.Errorf("table %s: %w", s.t.Name, err))
	}
	for _, p := range group {
		p.err = err
		close(p.done)
	}
}

// commit writes group's rows in one transaction.
func (s *tableStore) commit(group []*pendingCheckin) error {
	ctx, cancel := context.WithTimeout(context.Background(), txTimeout)
	defer cancel()
	if err := s.probe(ctx); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := s.writeAll(ctx, tx, group); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// writeAll writes a group's rows: those with a run id in one statement
// (jobruns.Upsert), the others one at a time, in order.
func (s *tableStore) writeAll(ctx context.Context, tx *sql.Tx, group []*pendingCheckin) error {
	var keyed []jobruns.Run
	for _, p := range group {
		r := runOf(p.rec)
		if r.RunID != "" {
			keyed = append(keyed, r)
			continue
		}
		if err := s.write(ctx, tx, p.rec.Event, r); err != nil {
			return err
		}
	}
	return s.t.Upsert(ctx, tx, keyed)
}

// runOf is what a check-in says of its run: a start has no status yet.
// Its output is made valid UTF-8 (each bad sequence U+FFFD): a utf8mb4
// column refuses anything else in strict mode, which would refuse a binary
// body, or one whose last 10 KiB begin inside a character, at every retry.
func runOf(rec spoolRecord) jobruns.Run {
	r := jobruns.Run{Job: rec.Job, Host: rec.Host, PID: rec.PID, RunID: rec.RunID,
		Started: rec.Time, Finished: rec.Time, Status: rec.Status, ExitCode: rec.ExitCode,
		Output: strings.ToValidUTF8(rec.Output, "\uFFFD")}
	if rec.Event == "skip" {
		r.Status = jobruns.StatusSkipped
	}
	return r
}

// probe finds out once that the table has what check-ins need (its
// columns, run_id and its unique key: jobruns.ProbeKeyed, which
// check-config runs too), and whether it has exit_code and output.
func (s *tableStore) probe(ctx context.Context) error {
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if s.probed {
		return nil
	}
	if err := s.t.ProbeKeyed(ctx, s.db); err != nil {
		return err
	}
	s.probed = true
	return nil
}

// write is a check-in's statement: a start inserts a row in progress, an
// end finishes its run's row (or inserts a finished one), a skip inserts a
// skipped row.
func (s *tableStore) write(ctx context.Context, tx *sql.Tx, event string, r jobruns.Run) error {
	switch event {
	case "start":
		_, err := s.t.InsertStart(ctx, tx, r)
		return err
	case "end":
		return s.t.Finish(ctx, tx, r)
	case "skip":
		return s.t.InsertFinished(ctx, tx, r)
	}
	return fmt.Errorf("check-in event %q", event)
}

// Close fails what is still pending, waits for the transaction under way
// (bounded by txTimeout) and closes the connections; once.
func (s *tableStore) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *tableStore) close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // the committer has a kick to read already
	}
	<-s.done
	s.mu.Lock()
	rest := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, p := range rest {
		p.err = errStoreClosed
		close(p.done)
	}
	return s.db.Close()
}
