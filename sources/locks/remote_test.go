package locks

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
	"github.com/jobwatch/jobwatch/internal/testsupport/redistest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// redisServer is a throwaway redis-server (redistest's), which the tests
// talk to in the inline protocol.
type redisServer struct {
	addr string
	srv  *redistest.Server
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	srv := redistest.Start(t, "")
	return &redisServer{addr: srv.Addr(), srv: srv}
}

func (s *redisServer) stop() { s.srv.Stop() }

// do sends one command in the inline protocol and returns the first line of
// the answer.
func (s *redisServer) do(t *testing.T, args ...string) string {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "%s\r\n", strings.Join(args, " "))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(buf[:n]))
}

// largeValue is the size of the lock values the memory tests use: far
// above what a probe may cost.
const largeValue = 64 << 20

// A lock value of 64 MB is read only as far as it is shown: a probe
// allocates a small fraction of it (GET read it whole: 64 MB and more).
func TestRedisProbeLargeValue(t *testing.T) {
	srv := startRedis(t)
	client, err := newRedisClient("redis://"+srv.addr+"/0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	host := hostname()
	srv.srv.SetLarge(t, "lock:large", host+":"+strconv.Itoa(os.Getpid())+":run:", largeValue)
	p := &redisProbe{client: client, key: "lock:large", host: host, alive: func(pid int) bool { return pid == os.Getpid() }}
	probe := func() State {
		st, err := p.probe(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	probe() // the connection dialled, its buffers made
	var st State
	if n := testproc.Allocated(func() { st = probe() }); n > 1<<20 {
		t.Errorf("a probe of a %d-byte value allocated %d bytes, want under 1 MiB", largeValue, n)
	}
	if !st.Held || st.Alive != HolderAlive || len(st.Holder) != maxHolder || !strings.HasPrefix(st.Holder, host+":") {
		t.Errorf("large value: %+v, want held by this live process, the holder cut to %d", st, maxHolder)
	}
}

func TestRedisProbe(t *testing.T) {
	srv := startRedis(t)
	client, err := newRedisClient("redis://"+srv.addr+"/0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	host := hostname()
	dead := exitedPID(t)
	probe := func(key string, now time.Time) State {
		p := &redisProbe{client: client, key: key, host: host, alive: func(pid int) bool { return pid == os.Getpid() }}
		st, err := p.probe(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	now := time.Now()

	if st := probe("lock:none", now); st.Held || st.HasTTL || st.NoExpiry {
		t.Errorf("missing key: %+v", st)
	}
	srv.do(t, "SET", "lock:ttl", "web2:4242:run", "PX", "60000")
	st := probe("lock:ttl", now)
	if !st.Held || !st.HasTTL || st.NoExpiry || st.TTL <= 50*time.Second || st.TTL > time.Minute || st.Holder != "web2:4242:run" || st.Alive != HolderUnknown {
		t.Errorf("key with TTL: %+v", st)
	}
	if !st.HeldSince.Equal(now) {
		t.Errorf("held since %v, want first seen %v", st.HeldSince, now)
	}
	srv.do(t, "SET", "lock:forever", host+":"+strconv.Itoa(dead)+":r1")
	st = probe("lock:forever", now)
	if !st.Held || st.HasTTL || !st.NoExpiry || st.Alive != HolderDead {
		t.Errorf("key without TTL, naming a dead local PID: %+v", st)
	}
	srv.do(t, "SET", "lock:mine", host+":"+strconv.Itoa(os.Getpid())+":r2", "EX", "100")
	if st := probe("lock:mine", now); st.Alive != HolderAlive {
		t.Errorf("key naming this live process: %+v", st)
	}
	srv.do(t, "SET", "lock:binary", "\x01"+strings.Repeat("x", 200))
	if st := probe("lock:binary", now); len(st.Holder) != maxHolder || st.Holder[0] != '?' {
		t.Errorf("holder from a long binary value: %q", st.Holder)
	}
	srv.do(t, "HSET", "lock:hash", "owner", "a")
	if st := probe("lock:hash", now); !st.Held || st.Holder != "" {
		t.Errorf("hash key: %+v", st)
	}

	// Expiring: held, then gone once the TTL runs out.
	srv.do(t, "SET", "lock:short", "v", "PX", "200")
	p := &redisProbe{client: client, key: "lock:short", host: host, alive: func(int) bool { return false }}
	first, err := p.probe(context.Background(), now)
	if err != nil || !first.Held {
		t.Fatalf("short key: %+v %v", first, err)
	}
	testproc.WaitUntil(t, 30*time.Second, "the short key to expire", func() bool {
		st, err := p.probe(context.Background(), now.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return !st.Held
	})
	// Held again: since is the new first sighting.
	srv.do(t, "SET", "lock:short", "v2", "PX", "60000")
	if st, _ := p.probe(context.Background(), now.Add(2*time.Second)); !st.HeldSince.Equal(now.Add(2 * time.Second)) {
		t.Errorf("held since %v after a new holder", st.HeldSince)
	}

	// The server down: an error, not a hang.
	srv.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := (&redisProbe{client: client, key: "lock:ttl", alive: func(int) bool { return false }}).probe(ctx, now); err == nil {
		t.Error("probe of a stopped server succeeded")
	}
}

func TestRedisURLErrorHidesPassword(t *testing.T) {
	_, err := newRedisClient("redis://user:s3cret@host:port:bad/0", "")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v", err)
	}
}

func TestMySQLProbe(t *testing.T) {
	srv := mariadbtest.Start(t)
	db := srv.DB(t, "")
	holder, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	var got sql.NullInt64
	if err := holder.QueryRowContext(context.Background(), "SELECT GET_LOCK('zz_daily_stats', 0)").Scan(&got); err != nil || got.Int64 != 1 {
		t.Fatalf("GET_LOCK: %v %v", got, err)
	}
	var connID int64
	if err := holder.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&connID); err != nil {
		t.Fatal(err)
	}

	probeDB, err := newMySQLDB(srv.Config("root", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer probeDB.Close()
	p := &mysqlProbe{db: probeDB, name: "zz_daily_stats"}
	now := time.Now()
	st, err := p.probe(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	want := "conn " + strconv.FormatInt(connID, 10) + " from "
	if !st.Held || st.Alive != HolderAlive || !strings.HasPrefix(st.Holder, want) || st.HeldSince.After(now) {
		t.Errorf("held lock: %+v, want holder %q...", st, want)
	}
	if st, _ := (&mysqlProbe{db: probeDB, name: "zz_other"}).probe(context.Background(), now); st.Held {
		t.Errorf("free lock: %+v", st)
	}

	// The holder's connection killed from another session: the lock is
	// gone with it, at the next probe.
	if _, err := db.Exec("KILL " + strconv.FormatInt(connID, 10)); err != nil {
		t.Fatal(err)
	}
	testproc.WaitUntil(t, 30*time.Second, "the lock to go with its connection", func() bool {
		st, err := p.probe(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		return !st.Held
	})
}
