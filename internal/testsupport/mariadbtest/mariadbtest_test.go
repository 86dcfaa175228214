package mariadbtest

import (
	"testing"
	"time"
)

func TestStartStopRestart(t *testing.T) {
	t0 := time.Now()
	s := Start(t)
	t.Logf("start %v", time.Since(t0))
	name := s.NewDatabase(t)
	s.Exec(t, name, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
	if s.External() {
		t.Skip("external server: restart not tested")
	}
	addr := s.Addr()
	t0 = time.Now()
	s.Kill()
	t.Logf("kill %v", time.Since(t0))
	db := s.DB(t, name)
	if err := db.Ping(); err == nil {
		t.Fatal("ping succeeded with the server killed")
	}
	s.Start()
	if s.Addr() != addr {
		t.Fatalf("address changed across restart: %s, then %s", addr, s.Addr())
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after restart: n=%d err=%v", n, err)
	}
	t0 = time.Now()
	s.Stop()
	t.Logf("stop %v", time.Since(t0))
	s.Start()
	if err := db.QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after clean restart: n=%d err=%v", n, err)
	}
}
