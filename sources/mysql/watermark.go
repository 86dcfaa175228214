package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
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
	// maxClockGap: a database clock (its UTC, or NOW() read in the DSN's
	// loc) further than this from this host's is not the clock of the
	// rows' writers but a zone mistake; it is logged and not used.
	maxClockGap = MaxTrxHold
)

// trxQuery reads the database's clock, as the table's DATETIME columns
// written with NOW() read through the DSN's loc and as an instant, and the
// age of the oldest transaction that has written rows. innodb_trx dates
// transactions in the server's system zone (not the session's), hence
// CONVERT_TZ from SYSTEM. Read-only transactions (a dump) do not count.
const trxQuery = "SELECT NOW(6), UNIX_TIMESTAMP(NOW(6)), " +
	"(SELECT TIMESTAMPDIFF(MICROSECOND, CONVERT_TZ(MIN(trx_started), 'SYSTEM', '+00:00'), UTC_TIMESTAMP(6)) " +
	"FROM information_schema.innodb_trx WHERE trx_rows_modified > 0)"

// dbClock is what one poll learned of what the database can still commit.
type dbClock struct {
	// known: innodb_trx was read; else the late window applies.
	known bool
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
}

// read returns what the database can still commit, asked just before a
// poll reads the table. An error of the server (no PROCESS privilege, no
// innodb_trx) falls back to the late window, logged once; an error of
// the connection is the poll's.
func (t *trxReader) read(ctx context.Context, db *sql.DB) (dbClock, error) {
	m := t.m
	if m.fixedLate {
		return dbClock{}, nil
	}
	host := m.now()
	if host.Before(t.retryAt) {
		return dbClock{}, nil
	}
	var tableNow sql.NullTime
	var epoch sql.NullFloat64
	var ageMicros sql.NullInt64
	err := db.QueryRowContext(ctx, trxQuery).Scan(&tableNow, &epoch, &ageMicros)
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
	base := t.clockBase(host, tableNow, epoch)
	c := dbClock{known: true, mark: base.Add(-WatermarkMargin)}
	if ageMicros.Valid {
		age := min(max(time.Duration(ageMicros.Int64)*time.Microsecond, 0), MaxTrxHold)
		c.oldest = host.Add(-age)
		c.mark = base.Add(-age - WatermarkMargin)
	}
	return c, nil
}

// clockBase is the earliest of the clocks a row may be dated by: this
// host's, the database's (a TIMESTAMP column written with NOW()) and NOW()
// as the source reads a DATETIME column (the session's zone, read in the
// DSN's loc). A database clock a zone away is logged, not used.
func (t *trxReader) clockBase(host time.Time, tableNow sql.NullTime, epoch sql.NullFloat64) time.Time {
	base := host
	for _, c := range []struct {
		what string
		at   time.Time
		ok   bool
	}{
		{"database clock", epochTime(epoch.Float64), epoch.Valid},
		{"NOW() read in the DSN's loc", tableNow.Time, tableNow.Valid},
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
