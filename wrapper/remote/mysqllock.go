package remote

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
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
	// proved is when the last check that found the lock this connection's
	// was asked (GET_LOCK's, at first): the lock was held until then.
	proved time.Time
	fence  string // this acquisition's fencing token, or ""
	// fenceErr says why there is no token, for the wrapper to say.
	fenceErr error
	// raw is the last connection dialled: the lock's (its pool makes no
	// other); nil when the DSN's network is one the driver dials itself.
	raw net.Conn
}

func newMySQLLock(cfg *mysql.Config, name string, interval time.Duration, red *secret.Redactor) (*mysqlLock, error) {
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, red.Err(fmt.Errorf("--lock-mysql: %w", err))
	}
	l := &mysqlLock{cfg: cfg, name: name, interval: interval, red: red}
	switch cfg.Net {
	case "tcp", "tcp4", "tcp6", "unix":
		// Dialled here, as the driver would, to keep the socket: see Held.
		cfg = cfg.Clone()
		cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			l.raw = c
			return c, err
		}
		if c, err = mysql.NewConnector(cfg); err != nil {
			return nil, red.Err(fmt.Errorf("--lock-mysql: %w", err))
		}
	}
	l.db = sql.OpenDB(c)
	return l, nil
}

// Held is a copy of the lock's socket: the server frees GET_LOCK when the
// connection closes, which with the reaper holding a copy is only once the
// job and its reaper are dead.
func (l *mysqlLock) Held() []*os.File {
	type filer interface{ File() (*os.File, error) }
	fc, ok := l.raw.(filer)
	if l.conn == nil || !ok {
		return nil
	}
	f, err := fc.File()
	if err != nil {
		return nil
	}
	return []*os.File{f}
}

func (l *mysqlLock) Layer() string { return wrapper.LayerMySQL }

func (l *mysqlLock) Acquire(ctx context.Context) (bool, string, error) {
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return false, "", l.error("connecting", err)
	}
	l.proved = time.Now()
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
		l.fence, l.fenceErr = l.countFence(ctx)
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
//
// A check that answers proves the lock held since GET_LOCK: the lock
// belongs to the connection, which is never replaced. So a wrapper that
// was paused or starved past the deadline asks once more, with the time
// an on-time check has, rather than count the lock lost unasked.
func (l *mysqlLock) Watch(ctx context.Context, _ func(time.Time)) (wrapper.LockLoss, bool) {
	t := time.NewTicker(l.interval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return wrapper.LockLoss{}, false
		case <-t.C:
		}
		asked := time.Now()
		deadline := l.proved.Add(lostAfter(l.interval))
		if least := asked.Add(l.interval * 2 / 5); deadline.Before(least) {
			deadline = least
		}
		if loss, lost := l.check(deadline); lost {
			return loss, true
		}
		l.proved = asked
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

// Release frees the lock. RELEASE_LOCK answering 1 proves it held by this
// connection until now; 0 or NULL, that it was lost before (not_owner),
// and an error that it may have been (connection_lost): either counts as
// lost only when the job ended after the last check that proved it held.
func (l *mysqlLock) Release(ctx context.Context, ended time.Time) (wrapper.LockLoss, bool, error) {
	if l.conn == nil {
		return wrapper.LockLoss{}, false, nil
	}
	var released sql.NullInt64
	err := l.conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", l.name).Scan(&released)
	l.conn.Close()
	l.conn = nil
	var loss wrapper.LockLoss
	switch {
	case err != nil:
		err = l.error("RELEASE_LOCK", err)
		loss.Reason = lostConnection
	case !released.Valid || released.Int64 != 1:
		loss.Reason = lostNotOwner
	default:
		return loss, false, nil
	}
	if !ended.After(l.proved) {
		return wrapper.LockLoss{}, false, err // the job ended while the lock was proved held
	}
	return loss, true, err
}

// fenceTable counts each lock's acquisitions in the DSN's database: the
// fencing tokens. Its name is fixed; the lock's name is a bound value.
const fenceTable = "jobwatch_lock_fence"

// countFence counts this acquisition, while GET_LOCK is held, and returns
// the count as the fencing token: "" and why when the DSN names no
// database or the table cannot be created or written.
func (l *mysqlLock) countFence(ctx context.Context) (string, error) {
	if l.cfg.DBName == "" {
		return "", errors.New("the --lock-mysql DSN names no database to keep the fencing counter in")
	}
	stmts := []string{
		"CREATE TABLE IF NOT EXISTS `" + fenceTable + "` (name VARCHAR(64) NOT NULL PRIMARY KEY, fence BIGINT UNSIGNED NOT NULL)",
		"INSERT INTO `" + fenceTable + "` (name, fence) VALUES (?, LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(fence + 1)",
	}
	if _, err := l.conn.ExecContext(ctx, stmts[0]); err != nil {
		return "", l.error("creating "+fenceTable, err)
	}
	if _, err := l.conn.ExecContext(ctx, stmts[1], l.name); err != nil {
		return "", l.error("counting in "+fenceTable, err)
	}
	var fence uint64
	if err := l.conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&fence); err != nil {
		return "", l.error("reading "+fenceTable, err)
	}
	return strconv.FormatUint(fence, 10), nil
}

// FencingToken is the acquisition's count in fenceTable, or "".
func (l *mysqlLock) FencingToken() (string, error) { return l.fence, l.fenceErr }

// LeaseTTL is 0: a MySQL lock lasts as long as its connection.
func (l *mysqlLock) LeaseTTL() time.Duration { return 0 }

// StopAt: none, the lock lasts as long as its connection.
func (l *mysqlLock) StopAt() time.Time { return time.Time{} }

func (l *mysqlLock) Close() {
	if l.conn != nil {
		l.conn.Close()
	}
	l.db.Close()
}
