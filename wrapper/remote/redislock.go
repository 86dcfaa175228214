package remote

import (
	"context"
	"errors"
	"fmt"
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
	red    *secret.Redactor
	got    time.Time // when the key was set or last renewed
}

// Scripts. renew returns 1 when extended, 0 when the key is gone, or the
// head of the value it holds instead of our token. Both read the value with
// GETRANGE, readLen bytes of it (renew's ARGV[3], release's ARGV[2]): a
// value of any size is compared with the token, and no more than that is
// sent back.
var (
	renewScript = `local v = redis.call('getrange', KEYS[1], 0, ARGV[3] - 1)
if v == ARGV[1] then redis.call('pexpire', KEYS[1], ARGV[2]) return 1 end
if redis.call('exists', KEYS[1]) == 1 then return v end
return 0`
	releaseScript = `if redis.call('getrange', KEYS[1], 0, ARGV[2] - 1) == ARGV[1] then return redis.call('del', KEYS[1]) end
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
func newRedisLock(url, passwordFile, key, token string, ttl time.Duration, red *secret.Redactor) (*redisLock, error) {
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
	return &redisLock{client: redis.NewClient(opt), addr: opt.Addr, key: key, token: token, ttl: ttl, red: red}, nil
}

func (l *redisLock) Layer() string { return wrapper.LayerRedis }

func (l *redisLock) Acquire(ctx context.Context) (bool, string, error) {
	// A SET retried after a lost reply finds our own token: GET tells.
	for range 3 {
		l.got = time.Now()
		err := l.client.Do(ctx, "SET", l.key, l.token, "NX", "PX", l.ttl.Milliseconds()).Err()
		if err == nil {
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

// watch renews the lease every ttl/3. A renewal that fails (the server
// unreachable) is retried every ttl/10; when none has succeeded for a whole
// TTL, the key may have expired on the server, and the lock counts as lost.
func (l *redisLock) Watch(ctx context.Context) (wrapper.LockLoss, bool) {
	every := l.ttl / 3
	retry := l.ttl / 10
	lastOK := l.got
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return wrapper.LockLoss{}, false
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		res, err := l.client.Eval(rctx, renewScript, []string{l.key}, l.token, l.ttl.Milliseconds(), l.readLen()).Result()
		cancel()
		switch v := res.(type) {
		case int64:
			if err == nil && v == 1 {
				lastOK = time.Now()
				t.Reset(every)
				continue
			}
			if err == nil {
				return wrapper.LockLoss{Reason: lostKeyGone}, true
			}
		case string:
			if err == nil {
				return wrapper.LockLoss{Reason: lostKeyTaken, Holder: v}, true
			}
		}
		if ctx.Err() != nil {
			return wrapper.LockLoss{}, false
		}
		if time.Since(lastOK) >= l.ttl {
			return wrapper.LockLoss{Reason: lostUnreachable}, true
		}
		t.Reset(retry)
	}
}

func (l *redisLock) Release(ctx context.Context) error {
	if err := l.client.Eval(ctx, releaseScript, []string{l.key}, l.token, l.readLen()).Err(); err != nil {
		return l.error("release", err)
	}
	return nil
}

func (l *redisLock) Close() { l.client.Close() }

// LeaseTTL is the lease, which the start record names.
func (l *redisLock) LeaseTTL() time.Duration { return l.ttl }
