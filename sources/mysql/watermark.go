package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The watermark read from the database (docs/mysql.md, "Watermark"). A row
// the source has not read yet is a row of a transaction still open, or of
// one not begun yet: it is dated no earlier than the start of the oldest
// transaction open that has written anything, or than now. Each poll asks
// the server for both before it reads the table, and vouches for the
// lower, mapped to this host's clock, with its batch (model.Batch's
// Watermark).
const (
	// WatermarkMargin is taken off what the database says: a writer dates
	// its row a moment before its transaction begins (a connection opened
	// in between), and clocks of writers disagree a little.
	WatermarkMargin = time.Second
	// MaxTrxHold bounds how far a transaction open for long (a batch job
	// writing for an hour, on any table) holds the watermark back: a row
	// it commits dated further back is counted late.
	MaxTrxHold = 10 * time.Minute
	// trxRetry is how long after innodb_trx could not be read (PROCESS not
	// granted) it is asked again; meanwhile the late window applies.
	trxRetry = 5 * time.Minute
	// trxEvery is about how often innodb_trx is read (from half to one
	// and a half times it, at random): not more often, so that readers
	// leave it the 0.1 s without a read it is refreshed after.
	trxEvery = 300 * time.Millisecond
	// staleAfter: innodb_trx not refreshed for this long is stale, and
	// staleWarn reads in a row finding it so are logged.
	staleAfter = 2 * trxEvery
	staleWarn  = 20
	// maxClockGap: a database clock (its UTC, or NOW() read in the DSN's
	// loc) further than this from this host's is not the clock of the
	// rows' writers but a zone mistake; it is logged and not used.
	maxClockGap = MaxTrxHold
)

// trxQuery reads the database's clock, as the table's DATETIME columns
// written with NOW() read through the DSN's loc and as an instant, the
// age of the oldest transaction that has written rows, and how fresh
// what innodb_trx shows is. innodb_trx dates transactions in the server's
// system zone (not the session's), hence CONVERT_TZ from SYSTEM.
// Read-only transactions (a dump) do not count.
//
// The server refreshes what innodb_trx shows only when it was last read
// more than 0.1 s before (trx_i_s_cache): readers more frequent than that
// see it as it was. So the query runs in a transaction of its own
// (trxBegin), its text starting with a token that holds the time it began
// (%[1]s, trxToken): the latest such token in what innodb_trx shows, this
// reader's or another jobwatch's, is a time at or after which it was
// refreshed. A transaction begun since dates its rows after that.
const (
	trxBegin  = "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"
	trxMarker = "jobwatch-watermark-"
	trxQuery  = "/* %[1]s */ SELECT NOW(6), UNIX_TIMESTAMP(NOW(6)), " +
		"(SELECT TIMESTAMPDIFF(MICROSECOND, CONVERT_TZ(MIN(trx_started), 'SYSTEM', '+00:00'), UTC_TIMESTAMP(6)) " +
		"FROM information_schema.innodb_trx WHERE trx_rows_modified > 0), " +
		"(SELECT MAX(CAST(SUBSTRING(trx_query, 23, 19) AS UNSIGNED)) FROM information_schema.innodb_trx " +
		"WHERE trx_query LIKE '/* " + trxMarker + "%%')"
)

// trxToken marks a query begun at t: the marker and t's UNIX nanoseconds,
// 19 digits, from the 23rd character of the query (SUBSTRING above).
func trxToken(t time.Time) string { return fmt.Sprintf("%s%019d", trxMarker, t.UnixNano()) }

// dbClock is what one poll learned of what the database can still commit.
type dbClock struct {
	// known: innodb_trx was read; else the late window applies.
	known bool
	// asOf: what it showed was true at this time (this host's clock) or
	// later; a gap seen since is not yet known to it.
	asOf time.Time
	// mark is the watermark to vouch for (zero when not known).
	mark time.Time
	// oldest is when, on this host's clock, the oldest transaction that
	// has written rows began (zero: none open).
	oldest time.Time
}

// trxReader asks the database for its watermark, and remembers for a
// while that it cannot.
type trxReader struct {
	m       *Source
	retryAt time.Time // innodb_trx unreadable until then
	warned  string    // the clock warning last logged
	stale   int       // reads in a row that found innodb_trx not refreshed
	// fresh: innodb_trx was refreshed at this time or later (zero: not
	// known yet).
	fresh time.Time
	next  time.Time // innodb_trx is read again from then
	last  dbClock   // its last answer
}

// trxRow is trxQuery's answer.
type trxRow struct {
	tableNow  sql.NullTime
	epoch     sql.NullFloat64
	ageMicros sql.NullInt64
	fresh     sql.NullInt64 // the latest token's nanoseconds
}

// read returns what the database can still commit, asked just before a
// poll reads the table, at most every trxEvery or so (the last answer in
// between). An error of the server (no PROCESS privilege, no innodb_trx)
// falls back to the late window, logged once; an error of the connection
// is the poll's.
func (t *trxReader) read(ctx context.Context, db *sql.DB) (dbClock, error) {
	m := t.m
	if m.fixedLate {
		return dbClock{}, nil
	}
	host := m.now()
	if host.Before(t.retryAt) {
		return dbClock{}, nil
	}
	if host.Before(t.next) {
		return t.last, nil
	}
	// Jittered, so that replicas polling one server do not keep reading
	// in step less than 0.1 s apart.
	t.next = host.Add(trxEvery/2 + rand.N(trxEvery))
	r, err := queryTrx(ctx, db, trxToken(host))
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		t.retryAt = host.Add(trxRetry)
		m.log.Warn("cannot read the database's open transactions (grant PROCESS): rows are awaited the late window",
			"late_window", m.late, "err", m.red.Err(err))
		return dbClock{}, nil
	}
	if err != nil {
		return dbClock{}, fmt.Errorf("reading the open transactions: %w", err)
	}
	t.retryAt = time.Time{}
	t.last = t.clock(host, r)
	return t.last, nil
}

// clock is what r says, read at host: as of the freshest token it shows
// (never ahead of host), else of the freshest one seen before.
func (t *trxReader) clock(host time.Time, r trxRow) dbClock {
	m := t.m
	if r.fresh.Valid && r.fresh.Int64 > 0 {
		f := time.Unix(0, r.fresh.Int64)
		if f.After(host) {
			f = host // another replica's clock ahead
		}
		if f.After(t.fresh) {
			t.fresh = f
		}
	}
	if !t.fresh.After(host.Add(-staleAfter)) {
		if t.stale++; t.stale == staleWarn {
			m.log.Warn("the database's open transactions are not refreshed: other clients read innodb_trx more often than every 0.1 s; the watermark moves only when they are",
				"reads", t.stale)
		}
	} else {
		t.stale = 0
	}
	if t.fresh.IsZero() {
		return dbClock{}
	}
	// The database's clocks are read at the query, elapsed after host.
	elapsed := max(m.now().Sub(host), 0)
	base := t.clockBase(host, r.tableNow, r.epoch, elapsed)
	if t.fresh.Before(base) {
		base = t.fresh
	}
	c := dbClock{known: true, asOf: t.fresh, mark: base.Add(-WatermarkMargin)}
	if r.ageMicros.Valid {
		age := min(max(time.Duration(r.ageMicros.Int64)*time.Microsecond, 0), MaxTrxHold)
		c.oldest = host.Add(-age)
		if o := c.oldest.Add(-WatermarkMargin); o.Before(c.mark) {
			c.mark = o
		}
	}
	return c
}

// queryTrx runs trxQuery, with token, in a transaction of its own, on a
// connection of its own.
func queryTrx(ctx context.Context, db *sql.DB, token string) (trxRow, error) {
	var r trxRow
	conn, err := db.Conn(ctx)
	if err != nil {
		return r, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, trxBegin); err != nil {
		return r, err
	}
	err = conn.QueryRowContext(ctx, fmt.Sprintf(trxQuery, token)).Scan(&r.tableNow, &r.epoch, &r.ageMicros, &r.fresh)
	if _, rerr := conn.ExecContext(ctx, "ROLLBACK"); err == nil {
		err = rerr
	}
	return r, err
}

// clockBase is the earliest of the clocks a row may be dated by: this
// host's, the database's (a TIMESTAMP column written with NOW()) and NOW()
// as the source reads a DATETIME column (the session's zone, read in the
// DSN's loc), these two as of elapsed before they were read. A database
// clock a zone away is logged, not used.
func (t *trxReader) clockBase(host time.Time, tableNow sql.NullTime, epoch sql.NullFloat64, elapsed time.Duration) time.Time {
	base := host
	for _, c := range []struct {
		what string
		at   time.Time
		ok   bool
	}{
		{"database clock", epochTime(epoch.Float64).Add(-elapsed), epoch.Valid},
		{"NOW() read in the DSN's loc", tableNow.Time.Add(-elapsed), tableNow.Valid},
	} {
		if !c.ok {
			continue
		}
		if gap := c.at.Sub(host); gap.Abs() > maxClockGap {
			if t.warned != c.what {
				t.warned = c.what
				t.m.log.Warn("the database's clock is far from this host's (time zone of the session or the DSN's loc?); not used for the watermark",
					"clock", c.what, "ahead", gap.Round(time.Second))
			}
			continue
		}
		if c.at.Before(base) {
			base = c.at
		}
	}
	return base
}

// epochTime is a UNIX_TIMESTAMP(NOW(6)) value as a time.
func epochTime(sec float64) time.Time {
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(math.Round(frac*1e6))*1e3)
}

// watermarkWarning is check-config's advice when the database's open
// transactions cannot be read (no PROCESS privilege): empty when they can,
// when late_window is set, or when the server cannot be asked.
func (m *Source) watermarkWarning(ctx context.Context, db *sql.DB) string {
	if m.fixedLate {
		return ""
	}
	_, err := queryTrx(ctx, db, trxToken(m.now()))
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return ""
	}
	return fmt.Sprintf("cannot read information_schema.innodb_trx (%v): grant PROCESS for the watermark from the database; without it the source's watermark is the clock less %s (docs/mysql.md#watermark)",
		m.red.Err(err), m.late)
}
