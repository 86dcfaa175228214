package remote

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"jobwatch/internal/mariadbtest"
)

// A run lasting a whole number of check intervals (5 s by default) ends as
// a keep-alive check starts: the lock is released all the same, on its own
// connection, with nothing on stderr (cron mails it) and no connection
// aborted on the server. Each length runs three times, all at once (before the fix, about one run in two failed).
func TestMySQLReleaseAtCheckTime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs of 5, 10 and 15 s")
	}
	srv := mariadbtest.Start(t)
	db := srv.NewDatabase(t)
	dsn := srv.RootDSN(db)
	admin := srv.DB(t, db)
	aborted := func() int64 {
		var name string
		var n int64
		if err := admin.QueryRow("SHOW GLOBAL STATUS LIKE 'Aborted_clients'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := aborted()
	t.Run("runs", func(t *testing.T) {
		for _, secs := range []int{5, 10, 15} {
			for i := range 3 {
				t.Run(fmt.Sprintf("%ds-%d", secs, i), func(t *testing.T) {
					t.Parallel()
					job := fmt.Sprintf("whole_%d_%d", secs, i)
					log := filepath.Join(t.TempDir(), "runs.log")
					code, stderr := wrap(t, "--job", job, "--log", log, "--lock-mysql", dsn, "--", "sleep", fmt.Sprint(secs))
					if code != 0 || stderr != "" {
						t.Errorf("exit %d, stderr %q; want 0 and nothing", code, stderr)
					}
					var free sql.NullInt64
					if err := admin.QueryRow("SELECT IS_FREE_LOCK(?)", "jobwatch."+job).Scan(&free); err != nil || free.Int64 != 1 {
						t.Errorf("the lock is still held after the run (%v)", err)
					}
				})
			}
		}
	})
	if n := aborted() - before; n != 0 {
		t.Errorf("%d connections aborted by the wrappers, want none", n)
	}
}
