package remote

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/jobwatch/jobwatch/internal/secret"
	"github.com/jobwatch/jobwatch/wrapper"
)

// mysqlLock is GET_LOCK(name, 0) on one dedicated connection (a sql.Conn,
// never a pooled one: the lock belongs to the connection, and a pool could
// reconnect, or hand the connection to someone else, behind the lock's
// back). While the job runs the connection is checked twice every
// interval; a check failed, none answered for lostAfter(interval), or
// another owner means the lock is lost.
type mysqlLock struct {
	cfg      *mysql.Config
	name     string
	interval time.Duration
	red      *secret.Redactor
	db       *sql.DB
	conn     *sql.Conn
}

func newMySQLLock(cfg *mysql.Config, name string, interval time.Duration, red *secret.Redactor) (*mysqlLock, error) {
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, red.Err(fmt.Errorf("--lock-mysql: %w", err))
	}
	return &mysqlLock{cfg: cfg, name: name, interval: interval, red: red, db: sql.OpenDB(c)}, nil
}

func (l *mysqlLock) Layer() string { return wrapper.LayerMySQL }

func (l *mysqlLock) Acquire(ctx context.Context) (bool, string, error) {
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return false, "", l.error("connecting", err)
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", l.name).Scan(&got); err != nil {
		conn.Close()
		return false, "", l.error("GET_LOCK", err)
	}
	switch {
	case !got.Valid:
		conn.Close()
		return false, "", wrapper.ConfigError(fmt.Errorf("mysql %s: GET_LOCK(%q) returned NULL", l.cfg.Addr, l.name))
	case got.Int64 == 1:
		l.conn = conn
		return true, "", nil
	}
	holder := l.holder(ctx, conn)
	conn.Close()
	return false, holder, nil
}

// holder names the connection holding the lock: its client's host:port
// from the processlist when this user may see it, else its id.
func (l *mysqlLock) holder(ctx context.Context, conn *sql.Conn) string {
	var id sql.NullInt64
	if conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", l.name).Scan(&id) != nil || !id.Valid {
		return ""
	}
	var host sql.NullString
	if conn.QueryRowContext(ctx, "SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = ?", id.Int64).Scan(&host) == nil && host.String != "" {
		return fmt.Sprintf("connection %d from %s", id.Int64, host.String)
	}
	return fmt.Sprintf("connection %d", id.Int64)
}

// error classifies err: a server that cannot be reached (refused, timed
// out, gone away) is unavailable; the server's own refusals (access
// denied, unknown database) are configuration errors.
func (l *mysqlLock) error(op string, err error) error {
	err = l.red.Err(fmt.Errorf("mysql %s: %s: %w", l.cfg.Addr, op, err))
	var merr *mysql.MySQLError
	var nerr net.Error
	switch {
	case errors.As(err, &nerr), errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &merr):
		return wrapper.ConfigError(err)
	}
	return err
}

// Watch checks the lock twice every interval, each check bounded by a
// deadline: lostAfter(interval) after the last check that answered was
// asked. A check that fails or has not answered by then is
// connection_lost, so that a run whose server hangs has recorded the loss
// and stopped its job within interval (5 s by default, docs/run.md).
func (l *mysqlLock) Watch(ctx context.Context) (wrapper.LockLoss, bool) {
	t := time.NewTicker(l.interval / 2)
	defer t.Stop()
	confirmed := time.Now() // held since GET_LOCK, checked from here on
	for {
		select {
		case <-ctx.Done():
			return wrapper.LockLoss{}, false
		case <-t.C:
		}
		asked := time.Now()
		if loss, lost := l.check(confirmed.Add(lostAfter(l.interval))); lost {
			return loss, true
		}
		confirmed = asked
	}
}

// lostAfter is how long a lock checked every interval/2 may go unconfirmed:
// nine tenths of interval, the rest kept to record the loss and stop the
// job. A check asked on time has at least two fifths of interval (2 s by
// default) to answer.
func lostAfter(interval time.Duration) time.Duration { return interval * 9 / 10 }

// check asks once whether the lock is still this connection's, by
// deadline. Its context is not Watch's: the driver closes the connection of
// a query whose context is cancelled, and the lock with it, so a run ending
// while a check is under way (a run lasting a whole number of check
// intervals) would find its connection gone when it releases the lock.
// A check under way is let finish instead, within its deadline.
func (l *mysqlLock) check(deadline time.Time) (wrapper.LockLoss, bool) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var mine sql.NullInt64
	err := l.conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", l.name).Scan(&mine)
	switch {
	case err != nil:
		return wrapper.LockLoss{Reason: lostConnection}, true
	case !mine.Valid || mine.Int64 != 1:
		return wrapper.LockLoss{Reason: lostNotOwner}, true
	}
	return wrapper.LockLoss{}, false
}

func (l *mysqlLock) Release(ctx context.Context) error {
	if l.conn == nil {
		return nil
	}
	var released sql.NullInt64
	err := l.conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", l.name).Scan(&released)
	l.conn.Close()
	l.conn = nil
	if err != nil {
		return l.error("RELEASE_LOCK", err)
	}
	return nil
}

// LeaseTTL is 0: a MySQL lock lasts as long as its connection.
func (l *mysqlLock) LeaseTTL() time.Duration { return 0 }

func (l *mysqlLock) Close() {
	if l.conn != nil {
		l.conn.Close()
	}
	l.db.Close()
}
