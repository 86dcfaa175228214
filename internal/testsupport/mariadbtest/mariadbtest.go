// Package mariadbtest starts a throwaway MariaDB server for tests: a fresh
// data directory in t.TempDir(), a free loopback port, and the server killed
// in t.Cleanup. The server can be stopped and started again on the same data
// directory and port, to test clients across a database restart.
//
// When JOBWATCH_TEST_MYSQL_DSN names a server (a go-sql-driver DSN of a user
// allowed to create databases and users), tests use it instead; Stop and
// Start are then not available and the tests that need them are skipped.
package mariadbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/jobwatch/jobwatch/internal/testsupport/netnstest"
	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
)

// EnvDSN names the environment variable that points the tests at an
// existing server instead of a throwaway one.
const EnvDSN = "JOBWATCH_TEST_MYSQL_DSN"

// Server is a MariaDB server the test may use.
type Server struct {
	t        testing.TB
	external *mysql.Config // set when EnvDSN is used

	dir  string
	port int
	args []string
	host string // the address it binds
	net  string // the driver's network: "tcp", or one that dials in a namespace

	proc testproc.Server
}

// Start starts a throwaway server (or connects to EnvDSN) and registers its
// shutdown with t.Cleanup. It fails the test, naming the Debian package, when
// the MariaDB binaries are missing, and skips it under go test -short.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, nil)
}

// StartOn starts a throwaway server in host's network namespace, on its
// address and the port 3306, as Start does on the loopback.
func StartOn(t testing.TB, host *netnstest.Host) *Server {
	t.Helper()
	return start(t, host)
}

func start(t testing.TB, host *netnstest.Host) *Server {
	t.Helper()
	testproc.SkipShort(t, "MariaDB")
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatalf("%s: %v", EnvDSN, err)
		}
		return &Server{t: t, external: cfg}
	}
	install, err1 := exec.LookPath("mariadb-install-db")
	server, err2 := lookServer()
	if err1 != nil || err2 != nil {
		t.Fatalf("MariaDB is not installed (mariadb-install-db, mariadbd): install the Debian package mariadb-server, or set %s", EnvDSN)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	// A temporary directory of its own: the server's temporary tables must
	// not share the machine's /tmp with other tests and their cleanups.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(install, "--no-defaults", "--datadir="+data, "--tmpdir="+tmp,
		"--auth-root-authentication-method=normal", "--skip-test-db",
		"--skip-name-resolve").CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	s := &Server{t: t, dir: dir, host: "127.0.0.1", net: "tcp"}
	prefix := s.place(host)
	s.args = append(prefix,
		server, "--no-defaults",
		"--datadir="+data,
		"--tmpdir="+tmp,
		"--socket="+filepath.Join(dir, "sock"),
		"--pid-file="+filepath.Join(dir, "pid"),
		"--port="+strconv.Itoa(s.port),
		"--bind-address="+s.host,
		"--skip-name-resolve",
		"--skip-log-bin",
		"--innodb-buffer-pool-size=256M",
		"--innodb-flush-log-at-trx-commit=2", // durable across a process kill, not an OS crash: enough for tests
		"--innodb-doublewrite=0",
		"--max-connections=50",
		"--log-error="+filepath.Join(dir, "error.log"),
	)
	if host != nil {
		s.args = append(s.args, "--init-file="+s.rootAnywhere())
	}
	if os.Geteuid() == 0 {
		s.args = append(s.args, "--user=root")
	}
	t.Cleanup(s.proc.Kill)
	s.Start()
	return s
}

// place sets the server's address, port and the driver's network: on the
// loopback, or in host's namespace (port 3306, dialled from in there). It
// returns the command prefix that runs the server there.
func (s *Server) place(host *netnstest.Host) (prefix []string) {
	if host == nil {
		s.port = testproc.FreePort(s.t)
		return nil
	}
	s.port, s.host, s.net = 3306, host.IP, "netns-"+host.Name
	mysql.RegisterDialContext(s.net, func(ctx context.Context, addr string) (net.Conn, error) {
		return host.Dial(ctx, "tcp", addr)
	})
	return host.Exec()
}

// rootAnywhere writes the --init-file that lets root in from the other
// namespaces too (mariadb-install-db makes root@localhost only): a server
// with no route out.
func (s *Server) rootAnywhere() string {
	f := filepath.Join(s.dir, "init.sql")
	sql := "CREATE USER IF NOT EXISTS 'root'@'%';\nGRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;\n"
	if err := os.WriteFile(f, []byte(sql), 0o600); err != nil {
		s.t.Fatal(err)
	}
	return f
}

func lookServer() (string, error) {
	if p, err := exec.LookPath("mariadbd"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mariadbd", "/usr/sbin/mysqld"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("mariadbd not found")
}

// External reports whether the server is the one EnvDSN names.
func (s *Server) External() bool { return s.external != nil }

// Addr is the server's host:port.
func (s *Server) Addr() string {
	if s.external != nil {
		return s.external.Addr
	}
	return net.JoinHostPort(s.host, strconv.Itoa(s.port))
}

// Config returns a driver config for user and password on database db.
func (s *Server) Config(user, password, db string) *mysql.Config {
	var cfg *mysql.Config
	if s.external != nil {
		cfg = s.external.Clone()
	} else {
		cfg = mysql.NewConfig()
		cfg.Net = s.net
		cfg.Addr = s.Addr()
	}
	cfg.User, cfg.Passwd, cfg.DBName = user, password, db
	cfg.ParseTime = true
	cfg.Timeout = 5 * time.Second
	cfg.Logger = &mysql.NopLogger{}
	return cfg
}

// RootDSN is the DSN of the administrative user on database db ("" for none).
func (s *Server) RootDSN(db string) string {
	return s.rootConfig(db).FormatDSN()
}

// rootConfig is the administrative user's config on database db.
func (s *Server) rootConfig(db string) *mysql.Config {
	if s.external != nil {
		return s.Config(s.external.User, s.external.Passwd, db)
	}
	return s.Config("root", "", db)
}

// open opens a pool as the administrative user, quiet about the bad
// connections a restarted server leaves behind.
func (s *Server) open(db string) *sql.DB {
	c, err := mysql.NewConnector(s.rootConfig(db))
	if err != nil {
		panic(err) // a Config built by s.Config is always valid
	}
	return sql.OpenDB(c)
}

// Start starts the server (again) and waits until it accepts connections.
func (s *Server) Start() {
	t := s.t
	t.Helper()
	if s.external != nil {
		t.Skip("cannot start an external server (" + EnvDSN + ")")
	}
	done, err := s.proc.Start(s.args, sysProcAttr())
	if err != nil {
		t.Fatalf("starting mariadbd: %v", err)
	}

	db := s.open("")
	defer db.Close()
	testproc.Eventually(t, 60*time.Second, "mariadbd to accept connections", func() error {
		select {
		case <-done:
			t.Fatalf("mariadbd exited: %s\n%s\n%q", s.errorLog(), s.proc.Output(), s.args)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := db.PingContext(ctx); err != nil {
			return fmt.Errorf("%w\n%s", err, s.errorLog())
		}
		return nil
	})
}

func (s *Server) errorLog() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "error.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Stop shuts the server down cleanly and waits for it to exit.
func (s *Server) Stop() { s.stop(syscall.SIGTERM) }

// Kill kills the server abruptly (SIGKILL), as a crash would.
func (s *Server) Kill() { s.stop(syscall.SIGKILL) }

func (s *Server) stop(sig syscall.Signal) {
	s.t.Helper()
	if s.external != nil {
		s.t.Skip("cannot stop an external server (" + EnvDSN + ")")
	}
	s.proc.Stop(sig, 60*time.Second)
}

// Hang stops the server's process (SIGSTOP), as a server that hangs: its
// connections stay open, nothing answers. resume sends SIGCONT; so does
// t.Cleanup, before the server is killed.
func (s *Server) Hang() (resume func()) {
	s.t.Helper()
	if s.external != nil {
		s.t.Skip("cannot hang an external server (" + EnvDSN + ")")
	}
	s.proc.Pause(s.t)
	resume = func() { _ = s.proc.Signal(syscall.SIGCONT) }
	s.t.Cleanup(resume)
	return resume
}

// NewDatabase creates a database with a fresh name, dropped in t.Cleanup
// (on an external server; a throwaway server goes away with its directory),
// and returns its name.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := "jw_" + randHex(6)
	s.Exec(t, "", "CREATE DATABASE `"+name+"`")
	if s.external != nil {
		t.Cleanup(func() {
			db := s.open("")
			db.Exec("DROP DATABASE IF EXISTS `" + name + "`")
			db.Close()
		})
	}
	return name
}

// JobRunsDatabase creates a database as NewDatabase does, with
// examples/job_runs.sql's table in it, and returns its name.
func (s *Server) JobRunsDatabase(t testing.TB) string {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("mariadbtest: where is examples/job_runs.sql?")
	}
	ddl, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "..", "examples", "job_runs.sql"))
	if err != nil {
		t.Fatal(err)
	}
	db := s.NewDatabase(t)
	s.Exec(t, db, string(ddl))
	return db
}

// NewUser creates a user with a fresh name and the given password, allowed
// to SELECT on database db, and returns its name.
func (s *Server) NewUser(t testing.TB, password, db string) string {
	t.Helper()
	name := "jw_" + randHex(6)
	s.Exec(t, "", "CREATE USER '"+name+"'@'%' IDENTIFIED BY '"+strings.ReplaceAll(password, "'", "''")+"'")
	s.Exec(t, "", "GRANT SELECT ON `"+db+"`.* TO '"+name+"'@'%'")
	if s.external != nil {
		t.Cleanup(func() {
			db := s.open("")
			db.Exec("DROP USER IF EXISTS '" + name + "'@'%'")
			db.Close()
		})
	}
	return name
}

// Exec runs statements as the administrative user on database db, failing
// the test on error.
func (s *Server) Exec(t testing.TB, db string, stmts ...string) {
	t.Helper()
	conn := s.open(db)
	defer conn.Close()
	for _, q := range stmts {
		if _, err := conn.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// DB opens a connection pool as the administrative user on database db,
// closed in t.Cleanup.
func (s *Server) DB(t testing.TB, db string) *sql.DB {
	t.Helper()
	conn := s.open(db)
	t.Cleanup(func() { conn.Close() })
	return conn
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b)
}
