package main

// Check-ins through the real binary (docs/checkins.md): over TLS with basic
// auth, a SIGKILL right after a burst of acknowledged check-ins, retries
// across a restart, and every kind of bad input. They reuse e2e_test.go's
// and web_test.go's helpers (buildBinary, startJobwatch, waitFor,
// tlsWebConfig).

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/status"
)

// newRID returns a random UUID (version 4), as `cat
// /proc/sys/kernel/random/uuid` gives one.
func newRID(t testing.TB) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ping sends one request and returns its status and body.
func ping(t testing.TB, client *http.Client, method, url, body string, header map[string]string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

// mustPing sends a check-in that has to be acknowledged.
func mustPing(t testing.TB, client *http.Client, url, body string) {
	t.Helper()
	method := "GET"
	if body != "" {
		method = "POST"
	}
	if code, msg := ping(t, client, method, url, body, nil); code != http.StatusOK {
		t.Fatalf("%s %s: %d %q, want 200", method, url, code, msg)
	}
}

const checkinConfig = `
jobs:
  - name: backup
    every: 24h
  - name: burst
    every: 1h
checkins:
  enabled: true
`

// TestCheckinsOverTLS: a start, an end with an exit code and a failure
// whose output is the body, over TLS with basic auth, as docs/checkins.md's
// curl lines send them; the output shows on the API and the job's page.
func TestCheckinsOverTLS(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	base, client, authed, logs := startTLSJobwatch(t, bin, dir, checkinConfig)
	addr := strings.TrimPrefix(base, "https://")

	// Without the password nothing is taken.
	if code, _ := ping(t, client, "GET", base+"/ping/backup", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("a check-in without the password: %d, want 401", code)
	}
	rid1, rid2 := newRID(t), newRID(t)
	mustPing(t, authed, base+"/ping/backup/start?rid="+rid1+"&host=laptop&pid=4242", "")
	mustPing(t, authed, base+"/ping/backup/0?rid="+rid1+"&host=laptop", "")
	mustPing(t, authed, base+"/ping/backup/start?rid="+rid2+"&host=laptop", "")
	output := "rsync: connection unexpectedly closed\n<script>alert('x')</script> & <b>done</b>\nexit 23\n"
	mustPing(t, authed, base+"/ping/backup/fail?rid="+rid2+"&host=laptop", output)

	var job status.Job
	testproc.EventuallyEvery(t, minWait, 100*time.Millisecond, "the check-ins to show on the API", func() error {
		code, body := ping(t, authed, "GET", base+"/api/v1/jobs/backup", "", nil)
		if code != 200 {
			t.Fatalf("/api/v1/jobs/backup: %d %s", code, body)
		}
		job = status.Job{}
		must(t, json.Unmarshal([]byte(body), &job))
		if job.Runs["success"]+job.Runs["failure"] != 2 || job.HeldRecords > 0 {
			return fmt.Errorf("runs %v, %d records held for their verdicts", job.Runs, job.HeldRecords) // facts show first
		}
		return nil
	})
	if job.Runs["success"] != 1 || job.Runs["failure"] != 1 || job.State != status.StateFailing || len(job.Running) != 0 {
		t.Errorf("runs %v, state %s, running %v: want a success, a failure, failing, none running", job.Runs, job.State, job.Running)
	}
	if len(job.RecentRuns) != 2 {
		t.Fatalf("recent runs %+v, want 2", job.RecentRuns)
	}
	last, first := job.RecentRuns[0], job.RecentRuns[1]
	if last.Result != "failure" || last.Output != output || last.Host != "laptop" || last.Start == nil {
		t.Errorf("last run %+v, want a failure on laptop with a start and the output %q", last, output)
	}
	if first.Result != "success" || first.ExitCode == nil || *first.ExitCode != 0 || first.PID != 4242 || first.DurationSeconds == nil {
		t.Errorf("first run %+v, want a success with exit code 0, pid 4242 and a duration", first)
	}
	code, page := ping(t, authed, "GET", base+"/status/job/backup", "", nil)
	if code != 200 {
		t.Fatalf("/status/job/backup: %d", code)
	}
	for _, want := range []string{"rsync: connection unexpectedly closed", "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;b&gt;done&lt;/b&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the job's page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "<b>done") {
		t.Errorf("the job's page shows the output unescaped")
	}

	// jobwatch check over TLS with the password in the URL, trusting the
	// certificate through SSL_CERT_FILE (docs/status.md).
	check := exec.Command(bin, "check", "--job", "backup", "--url", "https://"+testUser+":"+testPassword+"@"+addr)
	check.Env = append(check.Environ(), "SSL_CERT_FILE="+filepath.Join(dir, "jobwatch.crt"))
	out, err := check.Output()
	if code := exitCode(err); code != status.CheckWarning || !strings.HasPrefix(string(out), "JOBWATCH WARNING - backup: the last run failed |") {
		t.Errorf("jobwatch check over TLS: exit %d, %q; want 1 and the last run failed", code, out)
	}
	check = exec.Command(bin, "check", "--job", "backup", "--url", "https://"+testUser+":wrong@"+addr)
	check.Env = append(check.Environ(), "SSL_CERT_FILE="+filepath.Join(dir, "jobwatch.crt"))
	out, err = check.Output()
	if code := exitCode(err); code != status.CheckUnknown || !strings.Contains(string(out), "401") || strings.Contains(string(out), "wrong") {
		t.Errorf("jobwatch check with a wrong password: exit %d, %q; want 3, 401 and no password", code, out)
	}
	if strings.Contains(logs.String(), testPassword) {
		t.Errorf("the password is in the log")
	}
}

// basicAuth adds tlsWebConfig's user and password to every request.
type basicAuth struct{ next http.RoundTripper }

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(testUser, testPassword)
	return b.next.RoundTrip(r)
}

// burst sends n check-ins (n/2 runs: a start, then an end, with a run id)
// from clients concurrent clients, every one of which must be answered 200,
// and returns the run ids, every check-in's latency and how long the burst
// took. Every other run fails.
func burst(t testing.TB, base string, n, clients int) ([]string, []time.Duration, time.Duration) {
	t.Helper()
	return burstOf(t, n, clients, func(rid string, fail bool) (string, string) {
		end := "0"
		if fail {
			end = "1"
		}
		return base + "/ping/burst/start?rid=" + rid, base + "/ping/burst/" + end + "?rid=" + rid
	})
}

// burstOf is burst with the URLs of each run's start and end made by
// urls, of its run id and whether it fails (every other run).
func burstOf(t testing.TB, n, clients int, urls func(rid string, fail bool) (start, end string)) ([]string, []time.Duration, time.Duration) {
	t.Helper()
	runs := n / 2
	rids := make([]string, runs)
	for i := range rids {
		rids[i] = newRID(t)
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	lat := make([]time.Duration, 0, n)
	var (
		mu     sync.Mutex
		next   atomic.Int64
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	send := func(url string) bool {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Errorf("GET %s: %s", url, resp.Status)
			return false
		}
		d := time.Since(start)
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
		return true
	}
	began := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for failed.Load() == 0 {
				i := int(next.Add(1) - 1)
				if i >= runs {
					return
				}
				start, end := urls(rids[i], i%2 == 1)
				if !send(start) || !send(end) {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	if failed.Load() > 0 {
		t.FailNow()
	}
	return rids, lat, took
}

// TestCheckinBurstKill: 10,000 check-ins from 32 concurrent clients, every
// one acknowledged, then SIGKILL at once; after a restart on the same state
// directory every one is counted exactly once. Retries of acknowledged
// check-ins (same run id and event), sent again after the restart, are
// acknowledged and not counted. It logs the throughput and the latency of
// the burst (BENCHMARKS.md, "Check-ins").
func TestCheckinBurstKill(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, checkinConfig)
	stateDir := filepath.Join(dir, "state")
	in := startJobwatch(t, bin, cfg, stateDir, freePort(t))
	base := "http://" + in.addr

	const n, clients = 10000, 32
	rids, lat, took := burst(t, base, n, clients)
	in.kill(syscall.SIGKILL) // right after the last 200
	if len(lat) != n {
		t.Fatalf("%d check-ins acknowledged, want %d", len(lat), n)
	}
	slices.Sort(lat)
	t.Logf("%d check-ins from %d clients in %s: %.0f/s, latency p50 %s, p99 %s, max %s", n, clients, took.Round(time.Millisecond),
		float64(n)/took.Seconds(), lat[n/2].Round(10*time.Microsecond), lat[n*99/100].Round(10*time.Microsecond), lat[n-1].Round(10*time.Microsecond))

	// What the state had saved when it was killed (the spool has the rest).
	if snap, err := loadStateCopy(t, stateDir); err != nil {
		t.Fatalf("the state after SIGKILL: %v", err)
	} else if src := snapSource(snap); src != nil {
		t.Logf("saved at the kill: %d of %d check-ins applied, position %s", src.Records, n, src.Position)
	} else {
		t.Logf("saved at the kill: no check-in applied yet")
	}

	want := map[string]float64{
		`jobwatch_job_runs_total{job_name="burst",result="success"}`: n / 4,
		`jobwatch_job_runs_total{job_name="burst",result="failure"}`: n / 4,
		`jobwatch_job_running{job_name="burst"}`:                     0,
		`jobwatch_source_records_total{source="checkin"}`:            n,
		`jobwatch_source_parse_errors_total{source="checkin"}`:       0,
		`jobwatch_source_up{source="checkin",type="checkin"}`:        1,
	}
	in = startJobwatch(t, bin, cfg, stateDir, freePort(t))
	base = "http://" + in.addr
	in.waitFor(60*time.Second, want)

	// Retries after the restart: acknowledged, not applied.
	client := &http.Client{Timeout: time.Minute}
	for i, rid := range rids[len(rids)-100:] {
		end := "0"
		if (len(rids)-100+i)%2 == 1 {
			end = "1"
		}
		mustPing(t, client, base+"/ping/burst/start?rid="+rid, "")
		mustPing(t, client, base+"/ping/burst/"+end+"?rid="+rid, "")
	}
	// A new check-in after the retries: once it is applied, the retries
	// would have been too (the spool is read in order).
	mustPing(t, client, base+"/ping/backup", "")
	want[`jobwatch_job_runs_total{job_name="backup",result="success"}`] = 1
	want[`jobwatch_source_records_total{source="checkin"}`] = n + 1
	in.waitFor(30*time.Second, want)

	// And once more across a clean restart.
	in.kill(syscall.SIGTERM)
	in = startJobwatch(t, bin, cfg, stateDir, freePort(t))
	base = "http://" + in.addr
	// The end of run 0 again, as a failure this time: a run ends once,
	// so it is the same event and acknowledged without being applied.
	mustPing(t, client, base+"/ping/burst/fail?rid="+rids[0], "")
	rid := newRID(t)
	mustPing(t, client, base+"/ping/burst/start?rid="+rid, "")
	mustPing(t, client, base+"/ping/burst/fail?rid="+rid, "")
	want[`jobwatch_job_runs_total{job_name="burst",result="failure"}`] = n/4 + 1
	want[`jobwatch_source_records_total{source="checkin"}`] = n + 3
	in.waitFor(30*time.Second, want)
}

// snapSource is the check-in source's saved state, nil before the first save.
func snapSource(snap *model.Snapshot) *model.SourceState {
	if snap == nil {
		return nil
	}
	return snap.Sources["checkin"]
}

// TestCheckinBadInputs: every kind of bad check-in through the binary, with
// its status code and its count in jobwatch_checkins_rejected_total; none is
// applied.
func TestCheckinBadInputs(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, checkinConfig+"  max_body: 1KiB\n  jobs: [backup]\n")
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	base := "http://" + in.addr
	client := &http.Client{Timeout: time.Minute}
	rid := newRID(t)
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		code                     int
		reason                   string
	}{
		{"unknown job", "GET", "/ping/nosuch", "", nil, 404, "unknown_job"},
		{"job not in the allow-list", "GET", "/ping/burst/start", "", nil, 404, "unknown_job"},
		{"body over max_body", "POST", "/ping/backup/fail", strings.Repeat("x", 1025), nil, 413, "body_too_large"},
		{"huge body", "POST", "/ping/backup/fail", strings.Repeat("y", 8<<20), nil, 413, "body_too_large"},
		{"exit code 256", "GET", "/ping/backup/256", "", nil, 400, "bad_exit_code"},
		{"exit code -1", "GET", "/ping/backup/-1", "", nil, 400, "bad_exit_code"},
		{"exit code 007", "GET", "/ping/backup/007", "", nil, 400, "bad_exit_code"},
		{"unknown verb", "GET", "/ping/backup/finish", "", nil, 400, "bad_exit_code"},
		{"rid not a UUID", "GET", "/ping/backup/start?rid=12345", "", nil, 400, "bad_rid"},
		{"rid too long", "GET", "/ping/backup/start?rid=" + rid + "0", "", nil, 400, "bad_rid"},
		{"bad host", "GET", "/ping/backup?host=a%20b", "", nil, 400, "bad_host"},
		{"bad pid", "GET", "/ping/backup?pid=-3", "", nil, 400, "bad_pid"},
		{"reason not one of four", "GET", "/ping/backup/skip?reason=bored", "", nil, 400, "bad_reason"},
		{"reason on an end", "GET", "/ping/backup?reason=locked", "", nil, 400, "bad_reason"},
		{"PUT", "PUT", "/ping/backup", "", nil, 405, "method_not_allowed"},
		{"DELETE", "DELETE", "/ping/backup", "", nil, 405, "method_not_allowed"},
		{"cross-site", "GET", "/ping/backup", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "cross_site"},
		{"same-site, other port", "POST", "/ping/backup", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, "cross_site"},
		{"Origin of another site", "POST", "/ping/backup", "", map[string]string{"Origin": "http://evil.example"}, 403, "cross_site"},
		{"no job", "GET", "/ping/", "", nil, 404, "bad_path"},
		{"too deep", "GET", "/ping/backup/start/now", "", nil, 404, "bad_path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := ping(t, client, tc.method, base+tc.path, tc.body, tc.header)
			if code != tc.code {
				t.Errorf("%s %s: %d %q, want %d", tc.method, tc.path, code, msg, tc.code)
			}
		})
	}
	req, _ := http.NewRequest("PUT", base+"/ping/backup", nil)
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		if allow := resp.Header.Get("Allow"); allow != "GET, HEAD, POST" {
			t.Errorf("405 with Allow %q, want GET, HEAD, POST", allow)
		}
	}
	// What a browser sends for the same origin, and what curl sends, are
	// served; a valid check-in after the bad ones shows they were applied
	// in order and none of the bad ones was.
	mustPing(t, client, base+"/ping/backup/start?rid="+rid, "")
	if code, msg := ping(t, client, "POST", base+"/ping/backup/0?rid="+rid, strings.Repeat("z", 1024), map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"}); code != 200 {
		t.Errorf("a same-origin check-in with a body of max_body: %d %q", code, msg)
	}
	in.waitFor(30*time.Second, map[string]float64{
		`jobwatch_checkins_rejected_total{reason="unknown_job"}`:        2,
		`jobwatch_checkins_rejected_total{reason="body_too_large"}`:     2,
		`jobwatch_checkins_rejected_total{reason="bad_exit_code"}`:      4,
		`jobwatch_checkins_rejected_total{reason="bad_rid"}`:            2,
		`jobwatch_checkins_rejected_total{reason="bad_host"}`:           1,
		`jobwatch_checkins_rejected_total{reason="bad_pid"}`:            1,
		`jobwatch_checkins_rejected_total{reason="bad_reason"}`:         2,
		`jobwatch_checkins_rejected_total{reason="method_not_allowed"}`: 3,
		`jobwatch_checkins_rejected_total{reason="cross_site"}`:         3,
		`jobwatch_checkins_rejected_total{reason="bad_path"}`:           2,
		`jobwatch_source_records_total{source="checkin"}`:               2,
		`jobwatch_job_runs_total{job_name="backup",result="success"}`:   1,
		`jobwatch_job_runs_total{job_name="backup",result="failure"}`:   0,
		`jobwatch_job_consecutive_skips{job_name="backup"}`:             0,
	})
}

// BenchmarkCheckinsThroughBinary: check-ins a second through the real binary
// over HTTP on loopback, each on disk (fsynced) before its 200, from 1 to
// 128 concurrent clients, with the latency percentiles (BENCHMARKS.md,
// "Check-ins"). Run it with -benchtime=10000x: one op is one check-in.
func BenchmarkCheckinsThroughBinary(b *testing.B) {
	bin := buildBinary(b)
	// The baseline, in the same run: one 150-byte append and its fsync in
	// the same file system, no HTTP, one after the other.
	b.Run("fsync-alone", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "spool"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		must(b, err)
		defer f.Close()
		line := []byte(strings.Repeat("x", 149) + "\n")
		lat := make([]time.Duration, b.N)
		b.ResetTimer()
		for i := range b.N {
			start := time.Now()
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
			must(b, f.Sync())
			lat[i] = time.Since(start)
		}
		b.StopTimer()
		slices.Sort(lat)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fsyncs/s")
		b.ReportMetric(ms(lat[b.N/2]), "p50-ms")
		b.ReportMetric(ms(lat[b.N*99/100]), "p99-ms")
	})
	for _, clients := range []int{1, 8, 32, 128} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			dir := b.TempDir()
			cfg := filepath.Join(dir, "jobwatch.yml")
			testproc.WriteFile(b, cfg, checkinConfig)
			in := startJobwatch(b, bin, cfg, filepath.Join(dir, "state"), freePort(b))
			n := max(2, (b.N+1)/2*2)
			b.ResetTimer()
			_, lat, took := burst(b, "http://"+in.addr, n, clients)
			b.StopTimer()
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(float64(n)/took.Seconds(), "checkins/s")
			b.ReportMetric(ms(lat[n/2]), "p50-ms")
			b.ReportMetric(ms(lat[n*99/100]), "p99-ms")
		})
	}
}

// TestCheckinsReloadOffAndOn: check-ins turned off by a reload right after a
// burst are refused; turned on again, the source goes on from where it was
// in the spool: its counts continue, and nothing is applied twice.
func TestCheckinsReloadOffAndOn(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, checkinConfig)
	in := startJobwatch(t, bin, cfg, filepath.Join(dir, "state"), freePort(t))
	base := "http://" + in.addr

	const n = 2000
	burst(t, base, n, 16)
	testproc.WriteFile(t, cfg, strings.Replace(checkinConfig, "enabled: true", "enabled: false", 1))
	if code, msg := in.reload(); code != 200 {
		t.Fatalf("reload turning check-ins off: %d %s", code, msg)
	}
	client := &http.Client{Timeout: time.Minute}
	if code, _ := ping(t, client, "GET", base+"/ping/burst", "", nil); code != http.StatusNotFound {
		t.Errorf("a check-in while they are off: %d, want 404", code)
	}
	testproc.WriteFile(t, cfg, checkinConfig)
	if code, msg := in.reload(); code != 200 {
		t.Fatalf("reload turning check-ins on: %d %s", code, msg)
	}
	mustPing(t, client, base+"/ping/backup", "")
	in.waitFor(30*time.Second, map[string]float64{
		`jobwatch_job_runs_total{job_name="burst",result="success"}`:  n / 4,
		`jobwatch_job_runs_total{job_name="burst",result="failure"}`:  n / 4,
		`jobwatch_job_runs_total{job_name="backup",result="success"}`: 1,
		`jobwatch_source_records_total{source="checkin"}`:             n + 1,
		`jobwatch_checkins_rejected_total{reason="unknown_job"}`:      1,
	})
}

// TestCheckinKillMidBurst: SIGKILL while 32 clients are still sending. Every
// acknowledged check-in is applied after the restart; those in flight at the
// kill may or may not have been saved, and their clients' retries (same run
// id and event) make each of them count exactly once.
func TestCheckinKillMidBurst(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, checkinConfig)
	stateDir := filepath.Join(dir, "state")
	in := startJobwatch(t, bin, cfg, stateDir, freePort(t))
	base := "http://" + in.addr

	const clients, killAt = 32, 3000
	var (
		acked   atomic.Int64
		mu      sync.Mutex
		unacked []string // run ids whose end was sent and not answered 200
		wg      sync.WaitGroup
		once    sync.Once
	)
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				rid := newRID(t)
				resp, err := client.Get(base + "/ping/burst/0?rid=" + rid)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					mu.Lock()
					unacked = append(unacked, rid)
					mu.Unlock()
					return // jobwatch is gone
				}
				if acked.Add(1) == killAt {
					once.Do(func() { in.cmd.Process.Signal(syscall.SIGKILL) })
				}
			}
		}()
	}
	wg.Wait()
	in.cmd.Wait()
	a, u := int(acked.Load()), len(unacked)
	t.Logf("killed with %d check-ins acknowledged, %d in flight", a, u)

	// applied waits for a new check-in of backup to be applied (the spool is
	// read in order: everything before it is applied too) and returns the
	// check-ins of burst applied.
	barriers := 0
	applied := func(in *instance) int {
		t.Helper()
		mustPing(t, &http.Client{Timeout: time.Minute}, "http://"+in.addr+"/ping/backup", "")
		barriers++
		got := in.waitFor(60*time.Second, map[string]float64{`jobwatch_job_runs_total{job_name="backup",result="success"}`: float64(barriers)})
		return int(got[`jobwatch_job_runs_total{job_name="burst",result="success"}`])
	}
	in = startJobwatch(t, bin, cfg, stateDir, freePort(t))
	if got := applied(in); got < a || got > a+u {
		t.Fatalf("after the restart %d check-ins applied; %d were acknowledged and %d in flight", got, a, u)
	} else {
		t.Logf("after the restart: %d applied, %d of those in flight were saved", got, got-a)
	}
	// The clients retry what was not acknowledged.
	for _, rid := range unacked {
		mustPing(t, client, "http://"+in.addr+"/ping/burst/0?rid="+rid, "")
	}
	if got := applied(in); got != a+u {
		t.Errorf("after the retries %d check-ins applied, want %d (%d acknowledged, %d retried)", got, a+u, a, u)
	}
}

// startTLSJobwatch starts bin on config over TLS with basic auth (its
// web config and state in dir) and waits until it answers: its base URL, a
// client without credentials, one with them, and its log.
func startTLSJobwatch(t *testing.T, bin, dir, config string) (base string, client, authed *http.Client, logs *testproc.Buffer) {
	t.Helper()
	webCfg, client := tlsWebConfig(t, dir)
	cfg := writeConfig(t, dir, config)
	addr := freePort(t)
	cmd := exec.Command(bin, "--config.file="+cfg, "--state.path="+filepath.Join(dir, "state"), "--web.listen-address="+addr, "--web.config.file="+webCfg, "--sources.startup-hold=0s")
	logs = &testproc.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	must(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("jobwatch log:\n%s", logs.String())
		}
	})

	base = "https://" + addr
	authed = &http.Client{Timeout: client.Timeout, Transport: basicAuth{client.Transport}}
	testproc.Eventually(t, minWait, "jobwatch to answer over TLS", func() error {
		req, _ := http.NewRequest("GET", base+"/-/healthy", nil)
		resp, err := authed.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("/-/healthy: %s", resp.Status)
		}
		return nil
	})
	return base, client, authed, logs
}
