package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/jobwatch/jobwatch/internal/redisvalue"
	"github.com/jobwatch/jobwatch/internal/secret"
	"github.com/jobwatch/jobwatch/wrapper"
)

// go-redis logs some events (a failed dial, a pool message) through its own
// logger; the wrapper reports what matters itself, on one line.
func init() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// redisLock is a lease on a Redis key: SET key token NX PX ttl, renewed
// every ttl/3 while the job runs and released by compare-and-delete, both in
// Lua so that only the holder of the token ever extends or deletes it.
type redisLock struct {
	client *redis.Client
	addr   string // for messages; never the URL (it may hold a password)
	key    string
	token  string // host:pid:run_id: unique, and names the holder
	ttl    time.Duration
	margin time.Duration // wrapper.StopMargin: from the job's SIGTERM to the lease's end
	red    *secret.Redactor
	got    time.Time // when the SET or renewal that last succeeded was sent
	fence  int64     // this acquisition's fencing token
}

// Scripts. renew returns 1 when extended, 0 when the key is gone, or the
// head of the value it holds instead of our token. Both read the value with
// GETRANGE, readLen bytes of it (renew's ARGV[3], release's ARGV[2]): a
// value of any size is compared with the token, and no more than that is
// sent back.
var (
	// acquireScript sets the key and counts the acquisition in its fence
	// key, in one step: the fencing token. Nothing is changed when the
	// key exists or the fence key is not a counter (INCR fails first).
	acquireScript = `if redis.call('exists', KEYS[1]) == 1 then return false end
local f = redis.call('incr', KEYS[2])
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
return f`
	renewScript = `local v = redis.call('getrange', KEYS[1], 0, ARGV[3] - 1)
if v == ARGV[1] then redis.call('pexpire', KEYS[1], ARGV[2]) return 1 end
if redis.call('exists', KEYS[1]) == 1 then return v end
return 0`
	releaseScript = `local v = redis.call('getrange', KEYS[1], 0, ARGV[2] - 1)
if v == ARGV[1] then return redis.call('del', KEYS[1]) end
if redis.call('exists', KEYS[1]) == 1 then return v end
return 0`
)

// readLen is how much of the key's value is read: one byte more than the
// token, so that a longer value never reads as equal to it, and at least
// what a holder shows.
func (l *redisLock) readLen() int { return max(len(l.token)+1, redisvalue.Max) }

// minLockTTL is the shortest --lock-ttl: renewal every third of it must
// survive a slow network and a loaded host.
const minLockTTL = time.Second

// newRedisLock parses the URL (redis://, rediss://, unix://) and the
// password file. Nothing is dialled yet.
func newRedisLock(url, passwordFile, key, token string, ttl, margin time.Duration, red *secret.Redactor) (*redisLock, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		// go-redis' errors quote the URL, which may hold a password.
		return nil, errors.New("--lock-redis: not a redis://, rediss:// or unix:// URL")
	}
	// Only the password is hidden: the server's address stays readable
	// in errors (a one-letter password hidden everywhere would mangle them).
	red.AddPassword(opt.Password)
	if passwordFile != "" {
		pw, err := secret.ReadFile(passwordFile, nil)
		if err != nil {
			return nil, fmt.Errorf("--lock-redis-password-file: %w", err)
		}
		red.Add(pw)
		opt.Password = pw
	}
	opt.Protocol = 2                                                                                 // one round trip fewer than RESP3's HELLO fallback
	opt.DisableIdentity = true                                                                       // no CLIENT SETINFO on connect
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled} // no handshake a plain server refuses
	opt.DialTimeout = 2 * time.Second
	opt.ReadTimeout = 2 * time.Second
	opt.WriteTimeout = 2 * time.Second
	opt.MaxRetries = 1
	opt.PoolSize = 2
	opt.ContextTimeoutEnabled = true
	return &redisLock{client: redis.NewClient(opt), addr: opt.Addr, key: key, token: token, ttl: ttl, margin: margin, red: red}, nil
}

// fenceKey is the counter of the lock's acquisitions. '#' is in no lock
// name, so it is no other lock's key.
func (l *redisLock) fenceKey() string { return l.key + "#fence" }

// FencingToken is the acquisition's count in the fence key.
func (l *redisLock) FencingToken() (string, error) { return strconv.FormatInt(l.fence, 10), nil }

// Held is none: a lease lasts by time, not by its connection.
func (l *redisLock) Held() []*os.File { return nil }

func (l *redisLock) Layer() string { return wrapper.LayerRedis }

func (l *redisLock) Acquire(ctx context.Context) (bool, string, error) {
	// A SET retried after a lost reply finds our own token: GET tells.
	keys := []string{l.key, l.fenceKey()}
	for range 3 {
		l.got = time.Now()
		fence, err := l.client.Eval(ctx, acquireScript, keys, l.token, l.ttl.Milliseconds()).Int64()
		if err == nil {
			l.fence = fence
			return true, "", nil
		}
		if !errors.Is(err, redis.Nil) {
			return false, "", l.error("SET", err)
		}
		// The holder, read no further than it is shown: a value of 100 MB
		// must not cost this process 100 MB.
		v, err := redisvalue.Read(ctx, l.client, l.key, l.readLen())
		if err != nil {
			return false, "", l.error("reading the holder", err)
		}
		if v.Len == 0 {
			continue // expired in between (or empty): try again
		}
		if v.Head == l.token && !v.Cut() {
			// Ours: no one has counted an acquisition since ours.
			if l.fence, err = l.client.Get(ctx, l.fenceKey()).Int64(); err != nil {
				return false, "", l.error("reading the fencing token", err)
			}
			return true, "", nil
		}
		return false, v.Head[:min(len(v.Head), redisvalue.Max)], nil
	}
	return false, "", nil
}

// error classifies err: the server's own refusals (wrong password, no
// permission, a wrong type) are configuration errors; the rest (refused,
// timed out, loading, read-only replica) mean the server is unavailable.
func (l *redisLock) error(op string, err error) error {
	err = l.red.Err(fmt.Errorf("redis %s: %s: %w", l.addr, op, err))
	var rerr redis.Error
	if errors.As(err, &rerr) {
		for _, transient := range []string{"LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "BUSY"} {
			if strings.HasPrefix(rerr.Error(), transient) {
				return err
			}
		}
		return wrapper.ConfigError(err)
	}
	return err
}

// Watch renews the lease every third of it. The server's key lives at
// least ttl from when a renewal that succeeded was sent, so the job's stop
// deadline is that send, plus ttl, less the margin (wrapper.StopMargin):
// --kill-after, clock drift and scheduling slack, so that the job is gone
// before the key can expire. A renewal that fails is retried every ttl/10;
// every attempt has a deadline of its own (a hung network ends it), and
// none outlasts the stop deadline, at which the lock counts as lost.
func (l *redisLock) Watch(ctx context.Context, renewed func(stopAt time.Time)) (wrapper.LockLoss, bool) {
	every, retry := l.ttl/3, l.ttl/10
	stop := time.NewTimer(time.Until(l.stopAt()))
	defer stop.Stop()
	renewed(l.stopAt())
	t := time.NewTimer(every - time.Since(l.got)) // the job's start took some of it
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return wrapper.LockLoss{}, false
		case <-stop.C:
			return wrapper.LockLoss{Reason: wrapper.LostUnreachable}, true
		case <-t.C:
		}
		sent := time.Now()
		deadline := sent.Add(l.attemptTimeout())
		if l.stopAt().Before(deadline) {
			deadline = l.stopAt()
		}
		loss, lost, ok := l.renew(ctx, deadline)
		switch {
		case lost:
			return loss, true
		case ctx.Err() != nil:
			return wrapper.LockLoss{}, false
		case ok:
			l.got = sent
			stop.Reset(time.Until(l.stopAt()))
			renewed(l.stopAt())
			t.Reset(every - time.Since(sent))
		case !time.Now().Before(l.stopAt()):
			return wrapper.LockLoss{Reason: wrapper.LostUnreachable}, true
		default:
			t.Reset(retry)
		}
	}
}

// attemptTimeout bounds one renewal: a sixth of the lease, between 0.5 s
// and the 2 s the client gives any read, so that a hung connection is
// given up and the next attempt dials anew well before the stop deadline.
func (l *redisLock) attemptTimeout() time.Duration {
	return min(2*time.Second, max(l.ttl/6, 500*time.Millisecond))
}

// stopAt is the job's stop deadline: the last renewal (or SET) that
// succeeded was sent at l.got, so the key lives until at least l.got+ttl
// on the server's clock.
func (l *redisLock) stopAt() time.Time { return l.got.Add(l.ttl - l.margin) }

// heldUntil is the end of the lease as this host can prove it: the key
// lives at least ttl from the last successful send, less the clock drift.
func (l *redisLock) heldUntil() time.Time {
	return l.got.Add(l.ttl - time.Duration(float64(l.ttl)*wrapper.ClockDrift))
}

// renew extends the lease once, by deadline. ok: extended; lost: the key
// is gone or another's; neither: the server did not answer in time.
func (l *redisLock) renew(ctx context.Context, deadline time.Time) (loss wrapper.LockLoss, lost, ok bool) {
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	res, err := l.client.Eval(rctx, renewScript, []string{l.key}, l.token, l.ttl.Milliseconds(), l.readLen()).Result()
	if err != nil {
		return loss, false, false
	}
	switch v := res.(type) {
	case int64:
		if v == 1 {
			return loss, false, true
		}
		return wrapper.LockLoss{Reason: lostKeyGone}, true, false
	case string:
		return wrapper.LockLoss{Reason: lostKeyTaken, Holder: v}, true, false
	}
	return loss, false, false
}

// Release deletes the key if it still holds our token. A key deleted was
// ours from the SET to now (only this run's token extends it, and none
// sets it again once expired): held. A key gone or another's, or a server
// that does not answer, counts as lost only when the job ended after the
// lease's proved end (heldUntil): a wrapper paused after its job had
// finished finds its key expired, but the job was within its lease.
func (l *redisLock) Release(ctx context.Context, ended time.Time) (wrapper.LockLoss, bool, error) {
	loss, lost, err := l.release(ctx)
	if lost && !ended.After(l.heldUntil()) {
		return wrapper.LockLoss{}, false, err
	}
	return loss, lost, err
}

// release runs the release script; lost when the key was not ours, or
// when the server did not answer.
func (l *redisLock) release(ctx context.Context) (wrapper.LockLoss, bool, error) {
	res, err := l.client.Eval(ctx, releaseScript, []string{l.key}, l.token, l.readLen()).Result()
	if err != nil {
		return wrapper.LockLoss{Reason: wrapper.LostUnreachable}, true, l.error("release", err)
	}
	switch v := res.(type) {
	case int64:
		if v == 1 {
			return wrapper.LockLoss{}, false, nil
		}
	case string:
		return wrapper.LockLoss{Reason: lostKeyTaken, Holder: v}, true, nil
	}
	return wrapper.LockLoss{Reason: lostKeyGone}, true, nil
}

func (l *redisLock) Close() { l.client.Close() }

// LeaseTTL is the lease, which the start record names.
func (l *redisLock) LeaseTTL() time.Duration { return l.ttl }

// StopAt is the acquisition's stop deadline, which the reaper holds first.
func (l *redisLock) StopAt() time.Time { return l.stopAt() }
