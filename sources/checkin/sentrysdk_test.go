package checkin

import (
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	// The real SDK, test-only: what teams' schedulers send is what it
	// sends, envelope framing and X-Sentry-Auth included
	// (docs/checkins.md, "Moving from another monitor").
	"github.com/getsentry/sentry-go"
)

// The sentry-go SDK, its DSN's host jobwatch: CaptureCheckIn in progress,
// then ok with a duration under the same id, makes one run of the job its
// monitor slug is an alias of; an ok with a duration alone makes a run of
// that duration; a monitor of no job is refused and stores nothing.
func TestSentrySDKCheckIns(t *testing.T) {
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	dir := t.TempDir()
	var rej rejects
	r := dialectReceiver(t, dir, &rej, &now)
	r.opts.Now = clock
	srv := httptest.NewServer(r)
	defer srv.Close()

	client, err := sentry.NewClient(sentry.ClientOptions{
		Dsn:       "http://" + sKey + "@" + strings.TrimPrefix(srv.URL, "http://") + "/42",
		Transport: sentry.NewHTTPSyncTransport(), // each call returns once answered
	})
	if err != nil {
		t.Fatal(err)
	}
	hub := sentry.NewHub(client, sentry.NewScope())

	id := hub.CaptureCheckIn(&sentry.CheckIn{MonitorSlug: "nightly", Status: sentry.CheckInStatusInProgress}, nil)
	if id == nil {
		t.Fatal("no check-in id")
	}
	mu.Lock()
	now = now.Add(95 * time.Second)
	mu.Unlock()
	hub.CaptureCheckIn(&sentry.CheckIn{ID: *id, MonitorSlug: "nightly", Status: sentry.CheckInStatusOK, Duration: 95 * time.Second}, nil)
	hub.CaptureCheckIn(&sentry.CheckIn{MonitorSlug: "db-backup", Status: sentry.CheckInStatusError, Duration: 2 * time.Minute}, nil)
	hub.CaptureCheckIn(&sentry.CheckIn{MonitorSlug: "reports", Status: sentry.CheckInStatusInProgress}, &sentry.MonitorConfig{
		Schedule: sentry.CrontabSchedule("0 3 * * *"), CheckInMargin: 5, MaxRuntime: 30, Timezone: "Europe/Vienna"})

	recs := spooled(t, dir)
	if len(recs) != 4 {
		t.Fatalf("stored %d records: %+v", len(recs), recs)
	}
	rid := runID("", string(*id))
	if recs[0].Event != "start" || recs[0].RunID != rid || !recs[0].Time.Equal(t0) ||
		recs[1].Event != "end" || recs[1].Status != "success" || recs[1].RunID != rid || recs[1].Time.Sub(recs[0].Time) != 95*time.Second {
		t.Errorf("in progress then ok: %+v %+v", recs[0], recs[1])
	}
	if recs[2].Event != "start" || recs[3].Event != "end" || recs[3].Status != "failure" || recs[2].RunID != recs[3].RunID ||
		recs[3].Time.Sub(recs[2].Time) != 2*time.Minute || recs[2].Job != "backup" {
		t.Errorf("error with a duration: %+v %+v", recs[2], recs[3])
	}
	if rej.n[RejectUnknownJob] != 1 {
		t.Errorf("refused %v", rej.n)
	}
}
