package locks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jobwatch/jobwatch/internal/redisvalue"
)

// maxHolder bounds the holder text taken from a lock's value: it becomes a
// label value of jobwatch_lock_holder_info.
const maxHolder = 64

// holderText makes a value read from a server fit for a label: printable
// ASCII, at most maxHolder bytes.
func holderText(v string) string {
	if len(v) > maxHolder {
		v = v[:maxHolder]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, v)
}

// firstSeen remembers since when a lock has been seen held by one holder,
// for servers that do not say.
type firstSeen struct {
	holder string
	since  time.Time
}

func (f *firstSeen) update(held bool, holder string, now time.Time) time.Time {
	if !held {
		*f = firstSeen{}
		return time.Time{}
	}
	if f.since.IsZero() || f.holder != holder {
		*f = firstSeen{holder: holder, since: now}
	}
	return f.since
}

// redisProbe reads a Redis lock key with PTTL, GETRANGE and STRLEN only:
// it never sets, renews or deletes it, and reads no more of its value than
// redisvalue.Max bytes, however large the value is.
type redisProbe struct {
	client *redis.Client
	key    string
	host   string // this host's name: a value naming it and a PID is checked
	alive  func(int) bool
	seen   firstSeen
}

func (p *redisProbe) probe(ctx context.Context, now time.Time) (State, error) {
	st := State{Kind: kindRedis}
	pipe := p.client.Pipeline()
	ttl := pipe.PTTL(ctx, p.key)
	val := redisvalue.Queue(ctx, pipe, p.key, redisvalue.Max)
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	d, err := ttl.Result()
	if err != nil {
		return st, fmt.Errorf("redis PTTL: %w", err)
	}
	// PTTL answers -2 for a missing key and -1 for a key without expiry,
	// which go-redis passes on as those durations.
	if d == -2 {
		p.seen.update(false, "", now)
		return st, nil
	}
	st.Held = true
	if d == -1 {
		st.NoExpiry = true
	} else {
		st.TTL, st.HasTTL = d, true
	}
	v, err := val.Result()
	if err != nil && !redisvalue.IsWrongType(err) {
		return st, fmt.Errorf("redis: %w", err)
	}
	// A lock that is not a string (a hash, say) has no holder: v is empty.
	st.Holder = holderText(v.Head)
	// Two values with the same head are one holder unless their lengths
	// differ.
	st.HeldSince = p.seen.update(true, v.Head+"\x00"+strconv.FormatInt(v.Len, 10), now)
	st.Alive = tokenLiveness(v.Head, p.host, p.alive)
	return st, nil
}

// tokenLiveness reads a lock value of the form host:pid[:...] (jobwatch
// run's token): a process of this host can be checked.
func tokenLiveness(v, host string, alive func(int) bool) Liveness {
	parts := strings.SplitN(v, ":", 3)
	if len(parts) < 2 || host == "" || parts[0] != host {
		return HolderUnknown
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return HolderUnknown
	}
	if alive(pid) {
		return HolderAlive
	}
	return HolderDead
}

// mysqlProbe asks a MySQL or MariaDB server who holds a GET_LOCK name, with
// IS_USED_LOCK and the processlist only.
type mysqlProbe struct {
	db   *sql.DB
	name string
	seen firstSeen
}

func (p *mysqlProbe) probe(ctx context.Context, now time.Time) (State, error) {
	st := State{Kind: kindMySQL}
	var conn sql.NullInt64
	if err := p.db.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", p.name).Scan(&conn); err != nil {
		return st, fmt.Errorf("mysql IS_USED_LOCK: %w", err)
	}
	if !conn.Valid {
		p.seen.update(false, "", now)
		return st, nil
	}
	st.Held = true
	// The lock belongs to a connection, which exists while the server
	// answers IS_USED_LOCK with its id.
	st.Alive = HolderAlive
	st.Holder = "conn " + strconv.FormatInt(conn.Int64, 10)
	var host sql.NullString
	var secs sql.NullInt64
	err := p.db.QueryRowContext(ctx, "SELECT HOST, TIME FROM information_schema.PROCESSLIST WHERE ID = ?", conn.Int64).Scan(&host, &secs)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Without the PROCESS privilege only one's own connections show.
	case err != nil:
		return st, fmt.Errorf("mysql processlist: %w", err)
	case host.Valid && host.String != "":
		h := host.String
		if hh, _, err := net.SplitHostPort(h); err == nil {
			h = hh
		}
		st.Holder += " from " + holderText(h)
	}
	st.HeldSince = p.seen.update(true, st.Holder, now)
	// The connection's time in its current state bounds how long it has
	// held the lock when it has done nothing since taking it.
	if secs.Valid && secs.Int64 > 0 {
		if t := now.Add(-time.Duration(secs.Int64) * time.Second); t.Before(st.HeldSince) {
			st.HeldSince, p.seen.since = t, t
		}
	}
	return st, nil
}
