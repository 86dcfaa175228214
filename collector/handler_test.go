package collector

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/observation"
	"github.com/jobwatch/jobwatch/schedule"
)

const (
	acceptText = "text/plain;version=0.0.4;q=0.5"
	acceptOM   = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,text/plain;version=0.0.4;q=0.5"
)

// everyKind is populated's tracker with jobs of every other kind: calendar
// and no schedule, a job name to escape, held locks of every shape.
func everyKind(t *testing.T, now time.Time) *model.Tracker {
	t.Helper()
	tr := populated(now)
	cron, err := schedule.ParseCron("15 3 * * *", time.UTC, schedule.Debian)
	if err != nil {
		t.Fatal(err)
	}
	tr.Configure([]model.JobSpec{
		{Name: "backup", Schedule: schedule.Every(24 * time.Hour), Timeout: 30 * time.Minute, Scope: "cluster", StaleMultiple: 2},
		{Name: "stats", Schedule: schedule.Every(time.Hour), Scope: "host", StaleMultiple: 2},
		{Name: "nightly", Schedule: cron, Grace: time.Minute, StaleMultiple: 1},
		{Name: "adhoc"},
		{Name: `odd "name"\x`, Schedule: schedule.Every(time.Minute), StaleMultiple: 3},
	}, []model.SourceSpec{{Name: "app-runs", Type: "runlog"}})
	tr.Apply(model.Batch{Source: "app-runs", Events: []model.Event{
		{Kind: model.Start, Job: "nightly", Host: "web1", PID: 7, Time: now.Add(-20 * time.Hour)},
		{Kind: model.End, Job: "nightly", Host: "web1", PID: 7, Time: now.Add(-19 * time.Hour), Result: model.Success, HasExitCode: true},
		{Kind: model.Start, Job: "adhoc", Host: "web2", PID: 8, Time: now.Add(-time.Minute)},
		{Kind: model.Start, Job: "adhoc", Host: "web1", PID: 9, Time: now.Add(-time.Minute)},
		{Kind: model.Skip, Job: `odd "name"\x`, Host: "web1", PID: 3, Time: now.Add(-time.Minute), SkipLabel: "disabled"},
		{Kind: model.Skip, Job: "stats", Host: "web1", PID: 4, Time: now.Add(-time.Minute), SkipLabel: "maintenance"}, // a label a regex source declares
	}, Observations: []observation.Observation{
		{Kind: "widgets", Job: "stats", Key: "/run/stats.widget", Samples: []observation.Sample{
			{Metric: "widget_up", Value: 1}, {Metric: "widget_age_seconds", Since: now.Add(-time.Hour)}, {Metric: "widget_owner_info", Value: 1, Label: "pid 4300"},
		}},
		{Kind: "widgets", Job: "backup", Key: "backup", Samples: []observation.Sample{{Metric: "widget_up", Value: 0}, {Metric: "widget_errors_total", Value: 2}}},
		{Kind: "unregistered", Job: "backup", Key: "x", Samples: []observation.Sample{{Metric: "x", Value: 1}}},
	}})
	return tr
}

func mediaType(accept string) string {
	m, _, _ := strings.Cut(accept, ";")
	return m
}

func savedOf(tr *model.Tracker) *model.Saved { return (*model.Saved)(nil).With(tr.Changes()) }

// servers are today's client_golang handler (every metric through the
// Collector) and the Handler, on the same state.
func servers(saved func() *model.Saved, now func() time.Time, opts ...Options) (old, cur http.Handler) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	full := prometheus.NewPedanticRegistry()
	full.MustRegister(New(savedFunc(saved), now, o), collectors.NewBuildInfoCollector())
	old = promhttp.InstrumentMetricHandler(full, promhttp.HandlerFor(full, promhttp.HandlerOpts{
		Registry: full, EnableOpenMetrics: true, EnableOpenMetricsTextCreatedSamples: true,
	}))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collectors.NewBuildInfoCollector())
	cur = promhttp.InstrumentMetricHandler(reg, NewHandler(HandlerOpts{Registry: reg, Saved: saved, Now: now, Options: o}))
	return old, cur
}

func get(t testing.TB, h http.Handler, accept, encoding string) (*http.Response, []byte) {
	t.Helper()
	return getURL(t, h, "/metrics", accept, encoding)
}

func getURL(t testing.TB, h http.Handler, url, accept, encoding string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest("GET", url, nil)
	req.Header.Set("Accept", accept)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	rsp := rec.Result()
	body, err := io.ReadAll(rsp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if rsp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", rsp.StatusCode, body)
	}
	return rsp, body
}

// sortedLines are b's lines, sorted, but the creation times of promhttp's
// own counters (the two handlers' registries were not made at one instant).
func sortedLines(b []byte) []string {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "promhttp_metric_handler_") && strings.Contains(l, "_created{")
	})
	slices.Sort(lines)
	return lines
}

func typeLines(b []byte) []string {
	var out []string
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "# TYPE ") {
			out = append(out, line)
		}
	}
	return out
}

// checkFamilies fails unless every family has one header and its samples
// follow it, unsplit.
func checkFamilies(t *testing.T, b []byte) {
	t.Helper()
	seen := map[string]bool{}
	current := ""
	for line := range strings.Lines(string(b)) {
		if typ, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name := strings.Fields(typ)[0]
			if seen[name] {
				t.Fatalf("family %s split or repeated", name)
			}
			seen[name], current = true, name
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, current) {
			t.Fatalf("sample outside its family %s: %q", current, line)
		}
	}
}

// A retired job's history is on /metrics, and none of the series the
// bundled alerts fire on (alerts/jobwatch.rules.yml): no staleness,
// period, deadline, next run, timeout or runs in a row counted.
func TestHandlerRetiredJob(t *testing.T) {
	now := t0.Add(2*time.Hour + 30*time.Minute)
	saved := savedOf(everyKind(t, now))
	_, cur := servers(func() *model.Saved { return saved }, func() time.Time { return now })
	_, body := get(t, cur, acceptText, "")
	var got []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.Contains(l, `job_name="cleanup"`) {
			got = append(got, l)
		}
	}
	text := strings.Join(got, "\n")
	for _, want := range []string{
		`jobwatch_job_runs_total{job_name="cleanup",result="failure"} 2`,
		`jobwatch_job_runs_total{job_name="cleanup",result="success"} 1`,
		`jobwatch_job_retired_timestamp_seconds{job_name="cleanup"} `,
		`jobwatch_job_last_success_timestamp_seconds{job_name="cleanup"} `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s among the retired job's series:\n%s", want, text)
		}
	}
	for _, family := range []string{"seconds_since_last_success", "job_stale", "period_seconds", "deadline", "next_run",
		"timeout_seconds", "consecutive_failures", "consecutive_skips", "consecutive_missed_runs", "job_paused"} {
		if strings.Contains(text, family) {
			t.Errorf("a retired job has %s:\n%s", family, text)
		}
	}
}

// The Handler writes what client_golang wrote, for text and OpenMetrics,
// at every step of a changing state: the same lines, the families whole
// and in the same order; with the classic buckets and without.
func TestHandlerMatchesClientGolang(t *testing.T) {
	for _, o := range []Options{{}, {ClassicBuckets: true}} {
		t.Run(fmt.Sprintf("classic=%v", o.ClassicBuckets), func(t *testing.T) { testHandlerMatchesClientGolang(t, o) })
	}
}

func testHandlerMatchesClientGolang(t *testing.T, o Options) {
	now := t0.Add(2*time.Hour + 30*time.Minute)
	tr := everyKind(t, now)
	var saved *model.Saved
	clock := now
	old, cur := servers(func() *model.Saved { return saved }, func() time.Time { return clock }, o)
	steps := []struct {
		name   string
		change func()
	}{
		{"start", func() { saved = saved.With(tr.Changes()) }},
		{"later, nothing changed", func() { clock = clock.Add(26 * time.Hour) }},
		{"one job changed", func() {
			tr.Apply(model.Batch{Source: "app-runs", Events: []model.Event{
				{Kind: model.End, Job: "adhoc", Host: "web2", PID: 8, Time: clock, Result: model.Timeout},
			}})
			saved = saved.With(tr.Changes())
		}},
		{"job removed", func() {
			tr.Configure([]model.JobSpec{{Name: "adhoc"}, {Name: "stats", Schedule: schedule.Every(time.Hour)}},
				[]model.SourceSpec{{Name: "app-runs", Type: "runlog"}})
			saved = saved.With(tr.Changes())
		}},
	}
	for _, st := range steps {
		st.change()
		t.Run(st.name+"/protobuf", func(t *testing.T) {
			_, want := get(t, old, acceptProto, "")
			_, got := get(t, cur, acceptProto, "")
			if w, g := protoFamilies(t, want), protoFamilies(t, got); !slices.Equal(w, g) {
				t.Fatalf("families differ:\n--- client_golang\n%s\n--- Handler\n%s", strings.Join(w, "\n"), strings.Join(g, "\n"))
			}
		})
		for _, accept := range []string{acceptText, acceptOM} {
			t.Run(st.name+"/"+mediaType(accept), func(t *testing.T) {
				_, want := get(t, old, accept, "")
				rsp, got := get(t, cur, accept, "")
				if ct := rsp.Header.Get("Content-Type"); !strings.HasPrefix(ct, mediaType(accept)) {
					t.Errorf("Content-Type %q for Accept %q", ct, accept)
				}
				w, g := sortedLines(want), sortedLines(got)
				if !slices.Equal(w, g) {
					t.Fatalf("lines differ:\n--- client_golang\n%s\n--- Handler\n%s", want, got)
				}
				checkFamilies(t, got)
				if w, g := typeLines(want), typeLines(got); !slices.Equal(w, g) {
					t.Fatalf("families in another order:\n%q\n%q", w, g)
				}
				if !strings.Contains(string(got), "jobwatch_job_run_start_timestamp_seconds") {
					t.Fatal("no job metrics rendered")
				}
				if accept == acceptOM && !strings.HasSuffix(string(got), "# EOF\n") {
					t.Error("OpenMetrics without # EOF")
				}
			})
		}
	}
}

// Many jobs are rendered on several goroutines (run with -race): the
// first scrape, one after a few jobs changed, and ones after the first job
// went and a job came before all others (every job at a new place in the
// segments), write what client_golang writes.
func TestHandlerRendersManyJobsInParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	now := t0.Add(2 * time.Hour)
	n := 2 * parallelSegments * segmentJobs
	tr := manyJobs(n, now)
	saved := savedOf(tr)
	old, cur := servers(func() *model.Saved { return saved }, func() time.Time { return now })
	specs := func(names ...string) []model.JobSpec {
		var out []model.JobSpec
		for _, name := range names {
			out = append(out, model.JobSpec{Name: name, Schedule: schedule.Every(time.Hour), Timeout: time.Hour, StaleMultiple: 2})
		}
		for i := 1; i < n; i++ {
			out = append(out, model.JobSpec{Name: fmt.Sprintf("job_%05d", i), Schedule: schedule.Every(time.Hour), Timeout: time.Hour, StaleMultiple: 2})
		}
		return out
	}
	for step := range 4 {
		switch step {
		case 1:
			var evs []model.Event
			for i := 0; i < n; i += 37 {
				evs = append(evs, model.Event{Kind: model.Start, Job: fmt.Sprintf("job_%05d", i), Host: "web2", PID: 1 << 20, Time: now})
			}
			tr.Apply(model.Batch{Source: "runs", Events: evs})
		case 2:
			tr.Configure(specs(), []model.SourceSpec{{Name: "runs", Type: "runlog"}})
		case 3:
			tr.Configure(specs("a_first", "b_second"), []model.SourceSpec{{Name: "runs", Type: "runlog"}})
		}
		if step > 0 {
			saved = saved.With(tr.Changes())
		}
		for _, accept := range []string{acceptText, acceptOM} {
			_, want := get(t, old, accept, "")
			_, got := get(t, cur, accept, "")
			if w, g := sortedLines(want), sortedLines(got); !slices.Equal(w, g) {
				t.Fatalf("step %d, %s: %d lines, want %d", step, mediaType(accept), len(g), len(w))
			}
		}
	}
}

// A scrape is written in chunks by a goroutine of its own while the next
// chunk is filled (run with -race): whatever the chunk size, from every
// line its own chunk to one chunk for all, the body is the same bytes.
func TestHandlerChunksKeepTheBody(t *testing.T) {
	defer func(n int) { chunkSize = n }(chunkSize)
	now := t0.Add(2 * time.Hour)
	saved := savedOf(manyJobs(20*segmentJobs, now))
	h := NewHandler(HandlerOpts{Registry: prometheus.NewPedanticRegistry(), Saved: func() *model.Saved { return saved }, Now: func() time.Time { return now }})
	for _, accept := range []string{acceptText, acceptOM} {
		chunkSize = math.MaxInt
		_, want := get(t, h, accept, "")
		if len(want) < 3*576<<10 {
			t.Fatalf("%s: a body of %d bytes does not fill the chunks", mediaType(accept), len(want))
		}
		for _, size := range []int{1, 1000, 64 << 10, 512 << 10} {
			chunkSize = size
			if _, got := get(t, h, accept, ""); !bytes.Equal(got, want) {
				t.Fatalf("%s, chunks of %d bytes: %d bytes differ from the body in one chunk (%d bytes)", mediaType(accept), size, len(got), len(want))
			}
		}
	}
}

// failingWriter is a client gone away: every write fails.
type failingWriter struct {
	header http.Header
	writes int
}

func (w *failingWriter) Header() http.Header { return w.header }
func (w *failingWriter) WriteHeader(int)     {}
func (w *failingWriter) Write([]byte) (int, error) {
	w.writes++
	return 0, errors.New("connection reset by peer")
}

// When the client is gone, the scrape returns after the first failed
// write, writes nothing more, and counts one encoding error.
func TestHandlerClientGone(t *testing.T) {
	defer func(n int) { chunkSize = n }(chunkSize)
	chunkSize = 4 << 10
	now := t0.Add(2 * time.Hour)
	saved := savedOf(manyJobs(3*segmentJobs, now))
	h := NewHandler(HandlerOpts{Registry: prometheus.NewPedanticRegistry(), Saved: func() *model.Saved { return saved }, Now: func() time.Time { return now }})
	for i, accept := range []string{acceptText, acceptOM} {
		w := &failingWriter{header: http.Header{}}
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept", accept)
		h.ServeHTTP(w, req)
		if w.writes != 1 {
			t.Errorf("%s: %d writes to a client gone at the first", mediaType(accept), w.writes)
		}
		if got := testutil.ToFloat64(h.errCount.WithLabelValues("encoding")); got != float64(i+1) {
			t.Errorf("%s: %v encoding errors counted, want %d", mediaType(accept), got, i+1)
		}
	}
}

// panickingWriter panics at its first write.
type panickingWriter struct{ failingWriter }

func (w *panickingWriter) Write([]byte) (int, error) { panic("write panicked") }

// A panic of a write, which happens on the pipeline's goroutine, goes on in
// the scrape's, where net/http recovers it; the process goes on.
func TestHandlerWritePanicReachesTheScrape(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	saved := savedOf(everyKind(t, now))
	h := NewHandler(HandlerOpts{Registry: prometheus.NewPedanticRegistry(), Saved: func() *model.Saved { return saved }, Now: func() time.Time { return now }})
	got := func() (p any) {
		defer func() { p = recover() }()
		h.ServeHTTP(&panickingWriter{failingWriter{header: http.Header{}}}, httptest.NewRequest("GET", "/metrics", nil))
		return nil
	}()
	if got != "write panicked" {
		t.Fatalf("ServeHTTP recovered %v, want the write's panic", got)
	}
	if _, body := get(t, h, acceptText, ""); !bytes.Contains(body, []byte("jobwatch_job_info")) {
		t.Fatal("no scrape after the panic")
	}
}

func TestHandlerGzipAndProtobuf(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	saved := savedOf(everyKind(t, now))
	old, cur := servers(func() *model.Saved { return saved }, func() time.Time { return now })
	_, want := get(t, old, acceptText, "")
	rsp, zipped := get(t, cur, acceptText, "gzip")
	if rsp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q", rsp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sortedLines(want), sortedLines(got)) {
		t.Fatalf("gzipped lines differ:\n%s", got)
	}
	// Protobuf: the same families, value for value, native buckets
	// included.
	_, wantPB := get(t, old, acceptProto, "")
	_, gotPB := get(t, cur, acceptProto, "")
	if w, g := protoFamilies(t, wantPB), protoFamilies(t, gotPB); !slices.Equal(w, g) {
		t.Fatalf("protobuf differs:\n%s\n---\n%s", strings.Join(w, "\n"), strings.Join(g, "\n"))
	}
}

const acceptProto = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// protoFamilies are the families of a delimited protobuf body as text,
// each with its metrics sorted (the Handler writes a family's metrics job
// by job, a registry by label values), but promhttp's own.
func protoFamilies(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	dec := expfmt.NewDecoder(bytes.NewReader(b), expfmt.NewFormat(expfmt.TypeProtoDelim))
	for {
		mf := new(dto.MetricFamily)
		if err := dec.Decode(mf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(mf.GetName(), "promhttp_") {
			continue // counts the scrapes of each handler
		}
		metrics := make([]string, len(mf.Metric))
		for i, m := range mf.Metric {
			metrics[i] = prototext.Format(m)
		}
		slices.Sort(metrics)
		mf.Metric = nil
		out = append(out, prototext.Format(mf)+strings.Join(metrics, "\n"))
	}
	return out
}

// Scrapes in both formats run at once while the state changes (run with
// -race); each sees one whole state.
func TestHandlerConcurrentScrapes(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	tr := everyKind(t, now)
	var mu sync.Mutex
	saved := savedOf(tr)
	current := func() *model.Saved { mu.Lock(); defer mu.Unlock(); return saved }
	reg := prometheus.NewPedanticRegistry()
	h := NewHandler(HandlerOpts{Registry: reg, Saved: current, Now: func() time.Time { return now }})
	var wg sync.WaitGroup
	bodies := make([][][]byte, 4)
	for g := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				req := httptest.NewRequest("GET", "/metrics", nil)
				req.Header.Set("Accept", []string{acceptText, acceptOM}[g%2])
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					t.Errorf("status %d", rec.Code)
					return
				}
				bodies[g] = append(bodies[g], rec.Body.Bytes())
			}
		}()
	}
	for i := range 20 {
		tr.Apply(model.Batch{Source: "app-runs", Events: []model.Event{
			{Kind: model.Start, Job: "adhoc", Host: "web3", PID: 100 + i, Time: now},
		}})
		mu.Lock()
		saved = saved.With(tr.Changes())
		mu.Unlock()
	}
	wg.Wait()
	for _, bs := range bodies {
		for _, b := range bs {
			checkFamilies(t, b)
		}
	}
	_, body := get(t, h, acceptText, "")
	if got := strings.Count(string(body), `jobwatch_job_run_start_timestamp_seconds{host="web3",job_name="adhoc"`); got != 20 {
		t.Fatalf("%d runs of adhoc on web3 shown, want 20", got)
	}
}

// The cache of a format nobody scrapes in is dropped.
func TestHandlerDropsIdleCache(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	saved := savedOf(everyKind(t, now))
	clock := now
	reg := prometheus.NewPedanticRegistry()
	h := NewHandler(HandlerOpts{Registry: reg, Saved: func() *model.Saved { return saved }, Now: func() time.Time { return clock }})
	get(t, h, acceptText, "")
	get(t, h, acceptOM, "")
	if h.caches[fmtText] == nil || h.caches[fmtOpenMetrics] == nil {
		t.Fatal("no cache for a format just scraped")
	}
	clock = clock.Add(cacheIdle)
	get(t, h, acceptOM, "")
	if h.caches[fmtText] == nil {
		t.Fatal("text cache dropped before it was idle for cacheIdle")
	}
	clock = clock.Add(time.Second)
	get(t, h, acceptOM, "")
	if h.caches[fmtText] != nil {
		t.Fatal("text cache kept after an idle time of more than cacheIdle")
	}
	_, body := get(t, h, acceptText, "")
	if !strings.Contains(string(body), `jobwatch_job_info{job_name="stats",scope="host"} 1`) {
		t.Fatalf("text after its cache was dropped:\n%s", body)
	}
}

// The caches keep no view, nor the saved state, of a scrape alive once the
// state shown has moved on: a replaced view holds a copy of its job's
// state, and while a restart's records were held every job had three.
func TestHandlerKeepsNoReplacedView(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	tr := everyKind(t, now)
	saved := savedOf(tr)
	h := NewHandler(HandlerOpts{Registry: prometheus.NewPedanticRegistry(), Saved: func() *model.Saved { return saved }, Now: func() time.Time { return now }})
	for _, accept := range []string{acceptText, acceptOM, acceptProto} {
		get(t, h, accept, "")
	}
	gone := make(chan string, len(saved.JobNames())+1)
	for _, name := range saved.JobNames() {
		runtime.AddCleanup(saved.Job(name), func(n string) { gone <- n }, name)
	}
	runtime.AddCleanup(saved, func(string) { gone <- "the saved state" }, "")
	want := len(saved.JobNames()) + 1
	saved = savedOf(everyKind(t, now)) // shown from now on, not scraped yet
	deadline := time.Now().Add(time.Minute)
	for got := 0; got < want; {
		runtime.GC()
		select {
		case <-gone:
			got++
		case <-time.After(10 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d views and the saved state still alive after a minute", want-got, want)
			}
		}
	}
	for _, accept := range []string{acceptText, acceptOM, acceptProto} {
		if _, body := get(t, h, accept, ""); !strings.Contains(string(body), "jobwatch_job_run_start_timestamp_seconds") {
			t.Fatalf("%s after the state moved on: no job rendered", accept)
		}
	}
}

// ?name[]= selects families, as promhttp does.
func TestHandlerNameFilter(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	saved := savedOf(everyKind(t, now))
	old, cur := servers(func() *model.Saved { return saved }, func() time.Time { return now })
	for _, url := range []string{
		"/metrics?name[]=jobwatch_source_records_total",
		"/metrics?name[]=jobwatch_job_stale&name[]=jobwatch_job_runs_total&name[]=go_build_info",
		"/metrics?name[]=nothing",
	} {
		for _, accept := range []string{acceptText, acceptOM} {
			_, want := getURL(t, old, url, accept, "")
			_, got := getURL(t, cur, url, accept, "")
			if !slices.Equal(sortedLines(want), sortedLines(got)) {
				t.Errorf("%s, %s:\n%s\n--- want\n%s", url, mediaType(accept), got, want)
			}
		}
	}
}

// promtool's linter finds nothing in the Handler's output.
func TestHandlerPassesPromtool(t *testing.T) {
	promtool := testproc.Program(t, "promtool", "prometheus")
	now := t0.Add(2 * time.Hour)
	saved := savedOf(everyKind(t, now))
	_, cur := servers(func() *model.Saved { return saved }, func() time.Time { return now })
	_, body := get(t, cur, acceptText, "")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// render writes what client_golang and expfmt write, job by job, in the
// compact form compactLines makes of expfmt's lines.
func TestRenderMatchesReference(t *testing.T) {
	now := t0.Add(2*time.Hour + 30*time.Minute)
	var views []*model.JobView
	for _, saved := range []*model.Saved{savedOf(everyKind(t, now)), savedOf(manyJobs(50, now)), savedOf(oddJobs(t, now))} {
		for _, name := range saved.JobNames() {
			views = append(views, saved.Job(name))
		}
	}
	// Values formatted otherwise than as small whole numbers.
	for _, f := range [][3]float64{
		{math.NaN(), math.Inf(1), 1e6}, {math.Inf(-1), math.Copysign(0, -1), -999999},
		{999999, 1e6 + 0.5, -1e6}, {0.1, 1e-7, 123456789},
	} {
		v := *views[0]
		st := *v.JobState // the view's own: the saved one is shared
		v.JobState = &st
		spec := *v.Spec
		spec.Name = fmt.Sprintf("special_%v", f)
		v.Spec = &spec
		v.LastDuration, v.HasLastDuration = f[0], true
		v.Durations = model.Histogram{Sum: f[1], Count: 3e6, Counts: slices.Repeat([]uint64{uint64(f[2]) & 0xfffff}, len(model.DurationBuckets)+1)}
		v.LastExitCode, v.HasLastExitCode = int(f[2]), true
		views = append(views, &v)
	}
	for _, v := range views {
		name := v.Spec.Name
		for _, o := range []Options{{}, {ClassicBuckets: true}} {
			for _, format := range []int{fmtText, fmtOpenMetrics} {
				r := renderer{opts: o}
				want := r.renderReference(v, format, now)
				var got entry
				r.render(&got, v, format, now)
				label := want.label[:len(want.label)-1]
				var compact, expanded []byte
				for i := range families {
					ls := layouts[format].names[i]
					compact = compactLines(compact, want.data[want.off[i]:want.off[i+1]], label, ls)
					expanded = expandLines(expanded, got.data[got.off[i]:got.off[i+1]], label, ls)
				}
				if !bytes.Equal(expanded, want.data) || !bytes.Equal(got.label, want.label) || got.calendar != want.calendar {
					t.Errorf("job %q, format %d:\n%s\n%q\n--- want\n%s\n%q", name, format, expanded, got.label, want.data, want.label)
				}
				// The same compact form, so the same memory, as compactLines.
				if !bytes.Equal(got.data, compact) {
					t.Errorf("job %q, format %d: compact form\n%q\n--- want\n%q", name, format, got.data, compact)
				}
			}
		}
	}
}

// oddJobs are jobs whose lines take the rarer paths of rendering: names
// and label values to escape or in UTF-8, lines too long to keep compact,
// skip reasons of a regex source, runs in progress on several hosts,
// special float values.
func oddJobs(t *testing.T, now time.Time) *model.Tracker {
	t.Helper()
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: func() time.Time { return now }, Alive: func(int) bool { return true }})
	long := strings.Repeat("x", 300)
	names := []string{"back\\slash", `quote"d`, "new\nline", "ünïcødé-ジョブ", "a" + long, "z"}
	var specs []model.JobSpec
	for _, n := range names {
		specs = append(specs, model.JobSpec{Name: n, Schedule: schedule.Every(90 * time.Minute), Timeout: 1500 * time.Millisecond, StaleMultiple: 2})
	}
	tr.Configure(specs, []model.SourceSpec{{Name: "runs", Type: "runlog"}})
	var evs []model.Event
	for i, n := range names {
		evs = append(evs,
			model.Event{Kind: model.Start, Job: n, Host: "web\"2\"", PID: 1000 + i, Time: now.Add(-3 * time.Hour)},
			model.Event{Kind: model.End, Job: n, Host: "web\"2\"", PID: 1000 + i, Time: now.Add(-3*time.Hour + 1234567*time.Millisecond), Result: model.Success, HasExitCode: true},
			model.Event{Kind: model.Start, Job: n, Host: "web1", PID: 7, Time: now.Add(-2 * time.Hour)},
			model.Event{Kind: model.End, Job: n, Host: "web1", PID: 7, Time: now.Add(-2*time.Hour + 250*time.Millisecond), Result: model.Timeout, ExitCode: -1, HasExitCode: true},
			model.Event{Kind: model.Skip, Job: n, Host: "web1", PID: 8, Time: now.Add(-time.Hour), SkipLabel: "zz custom\nreason"},
			model.Event{Kind: model.Skip, Job: n, Host: "web1", PID: 9, Time: now.Add(-time.Hour), SkipLabel: "aa " + long},
			model.Event{Kind: model.Skip, Job: n, Host: "web1", PID: 9, Time: now.Add(-time.Hour), SkipLabel: "ñ-reason"},
			model.Event{Kind: model.Start, Job: n, Host: "web9", PID: 12, Time: now.Add(-time.Minute)},
			model.Event{Kind: model.Start, Job: n, Host: "web10", PID: 3, Time: now.Add(-time.Minute)},
			model.Event{Kind: model.Start, Job: n, Host: "web10", PID: 20, Time: now.Add(-time.Second)},
			model.Event{Kind: model.Start, Job: n, Host: "", PID: 0, Time: now.Add(-time.Second)},
		)
	}
	tr.Apply(model.Batch{Source: "runs", Events: evs})
	return tr
}

func TestAppendFloat(t *testing.T) {
	for _, tc := range []struct {
		f        float64
		text, om string
	}{
		{0, "0", "0.0"}, {1, "1", "1.0"}, {-1, "-1", "-1.0"}, {0.5, "0.5", "0.5"},
		{1e21, "1e+21", "1e+21"}, {1764583200.25, "1.76458320025e+09", "1.76458320025e+09"},
		{3600, "3600", "3600.0"}, {999999, "999999", "999999.0"}, {-999999, "-999999", "-999999.0"},
		{1e6, "1e+06", "1e+06"}, {-1e6, "-1e+06", "-1e+06"}, {123456.5, "123456.5", "123456.5"},
		{math.Copysign(0, -1), "0", "0.0"}, {math.NaN(), "NaN", "NaN"}, {math.Inf(1), "+Inf", "+Inf"},
		{math.Inf(-1), "-Inf", "-Inf"}, {1e-7, "1e-07", "1e-07"}, {1 << 62, "4.611686018427388e+18", "4.611686018427388e+18"},
	} {
		if got := string(appendFloat(nil, tc.f, fmtText)); got != tc.text {
			t.Errorf("text %v: %q, want %q", tc.f, got, tc.text)
		}
		if got := string(appendFloat(nil, tc.f, fmtOpenMetrics)); got != tc.om {
			t.Errorf("OpenMetrics %v: %q, want %q", tc.f, got, tc.om)
		}
	}
}

// appendFloat writes what expfmt writes, for values of every kind.
func TestAppendFloatMatchesExpfmt(t *testing.T) {
	d := prometheus.NewDesc("x", "x", nil, nil)
	rnd := rand.New(rand.NewPCG(1, 2))
	values := []float64{0, math.Copysign(0, -1), 1, -1, 1e6 - 1, 1e6, 1e6 + 1, -1e6 + 1, -1e6, 1 << 53, 1<<53 + 1, 1 << 63, -1 << 63,
		math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1), 0.1, 1e-5, 1e21}
	for range 3000 {
		values = append(values, float64(rnd.IntN(4e6)-2e6), rnd.Float64()*1e10, rnd.NormFloat64(), float64(rnd.Int64()), math.Float64frombits(rnd.Uint64()))
	}
	for _, f := range values {
		mf := &dto.MetricFamily{Name: new("x"), Help: new("x"), Type: dto.MetricType_GAUGE.Enum()}
		m := &dto.Metric{}
		if err := prometheus.MustNewConstMetric(d, prometheus.GaugeValue, f).Write(m); err != nil {
			t.Fatal(err)
		}
		mf.Metric = []*dto.Metric{m}
		for format, write := range []func(io.Writer, *dto.MetricFamily) (int, error){
			expfmt.MetricFamilyToText,
			func(w io.Writer, mf *dto.MetricFamily) (int, error) { return expfmt.MetricFamilyToOpenMetrics(w, mf) },
		} {
			var b bytes.Buffer
			if _, err := write(&b, mf); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			want := strings.TrimPrefix(lines[len(lines)-1], "x ")
			if got := string(appendFloat(nil, f, format)); got != want {
				t.Errorf("%v (%x) in format %d: %q, want %q", f, math.Float64bits(f), format, got, want)
			}
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"": false, "gzip": true, "deflate, gzip;q=1.0, *;q=0.5": true, "gzip;q=0": false, "identity": false, "GZIP": true,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v", h, got)
		}
	}
}

// Lines kept compact are written back as they were, including lines that
// do not start with a name and the job's label (stored whole).
func TestCompactLines(t *testing.T) {
	names := layouts[fmtOpenMetrics].names[familyOf[runsDesc]]
	label := []byte(`{job_name="a\"b"`)
	total, created := "jobwatch_job_runs_total", "jobwatch_job_runs_created"
	lines := []byte(total + `{job_name="a\"b",result="failure"} 1.0` + "\n" +
		created + `{job_name="a\"b",result="failure"} 1.7e+09` + "\n" +
		total + `{job_name="a\"b"} 2.0` + "\n" +
		total + `{aaa="x",job_name="a\"b"} 3.0` + "\n" + // a label before job_name
		total + `{job_name="a\"bc"} 4.0` + "\n" + // another job's label
		`other_name{job_name="a\"b"} 5.0` + "\n" +
		// _created lines repeating the labels before them and the last
		// _created value: 1 byte each
		total + `{job_name="a\"b",result="lost"} 0.0` + "\n" +
		created + `{job_name="a\"b",result="lost"} 1.7e+09` + "\n" + // repeated
		total + `{job_name="a\"b",result="success"} 0.0` + "\n" +
		created + `{job_name="a\"b",result="success"} 1.7e+09` + "\n" + // repeated
		created + `{job_name="a\"b",result="success"} 1.8e+09` + "\n" + // another value
		total + `{job_name="a\"b",result="timeout"} 0.0` + "\n" +
		created + `{job_name="a\"b",result="timeout"} 1.8e+09` + "\n" + // repeated
		created + `{job_name="a\"b",result="other"} 1.8e+09` + "\n" + // other labels
		total + `{job_name="a\"b",reason="` + strings.Repeat("x", 300) + `"} 1.0` + "\n") // too long for its length byte
	// A histogram's buckets in the order of their bounds keep their
	// values only; one out of order does not.
	h := layouts[fmtOpenMetrics].names[familyOf[durationDesc]]
	bucket, sum := h.names[tagBucket], h.names[3]
	hist := []byte(bucket + `{job_name="a\"b",le="0.1"} 0` + "\n" +
		bucket + `{job_name="a\"b",le="0.5"} 1` + "\n" +
		bucket + `{job_name="a\"b",le="5.0"} 2` + "\n" + // not the third bound
		bucket + `{job_name="a\"b",le="5.0"} 3` + "\n" + // the fourth
		sum + `{job_name="a\"b"} 7.5` + "\n")
	hc := compactLines(nil, hist, label, h)
	if got := expandLines(nil, hc, label, h); !bytes.Equal(got, hist) {
		t.Errorf("written back:\n%s\n--- want\n%s", got, hist)
	}
	if n := bytes.Count(hc, []byte{repeatBucket}); n != 3 {
		t.Errorf("%d buckets kept as values, want 3: %q", n, hc)
	}

	c := compactLines(nil, lines, label, names)
	if got := expandLines(nil, c, label, names); !bytes.Equal(got, lines) {
		t.Errorf("written back:\n%s\n--- want\n%s", got, lines)
	}
	if verbatims := bytes.Count(c, []byte{verbatim}); verbatims != 4 {
		t.Errorf("%d lines stored whole, want 4: %q", verbatims, c)
	}
	if repeats := bytes.Count(c, []byte{repeatCreated}); repeats != 3 {
		t.Errorf("%d _created lines repeated, want 3: %q", repeats, c)
	}
	if len(c) >= len(lines)*4/5 {
		t.Errorf("compact form is %d bytes of %d", len(c), len(lines))
	}
}

// How far behind each source's watermark is: its late window while it is
// at its end, the time since it went down once it is down, nothing before
// it has reported; the same through the Collector and the Handler, which
// writes it at each scrape.
func TestDecisionsBehind(t *testing.T) {
	now := t0
	clock := func() time.Time { return now }
	tr := model.New(model.Options{StartupHold: model.NoStartupHold, Host: "here", Now: clock, Alive: func(int) bool { return true }})
	tr.Configure([]model.JobSpec{{Name: "j", Schedule: schedule.Every(time.Hour), StaleMultiple: 2}},
		[]model.SourceSpec{{Name: "a", Type: "runlog", Runs: true, LateWindow: 2 * time.Second}, {Name: "b", Type: "mysql", Runs: true, LateWindow: 10 * time.Minute}})
	tr.SetHealth("a", true, nil)
	tr.Apply(model.Batch{Source: "a", AtEnd: true, Events: []model.Event{{Kind: model.End, Job: "j", Host: "h", Time: now.Add(-time.Minute), Result: model.Success}}})
	var saved *model.Saved
	current := func() *model.Saved { return saved }
	old, cur := servers(current, clock)
	check := func(want map[string]string) {
		t.Helper()
		saved = saved.With(tr.Changes())
		for name, h := range map[string]http.Handler{"Collector": old, "Handler": cur} {
			_, body := get(t, h, acceptText, "")
			if strings.Contains(string(body), "jobwatch_job_decisions_behind_seconds") {
				t.Errorf("%s: a job's decisions_behind, which went per source:\n%s", name, body)
			}
			for _, src := range []string{"a", "b"} {
				line := `jobwatch_source_decisions_behind_seconds{source="` + src + `"} `
				has := strings.Contains(string(body), line+want[src]+"\n")
				if v, ok := want[src]; ok && !has || !ok && strings.Contains(string(body), line) {
					t.Errorf("%s: want %q%s in\n%s", name, line, v, body)
				}
			}
		}
	}
	check(map[string]string{"a": "2"}) // b has read nothing yet: no watermark
	tr.Apply(model.Batch{Source: "b", AtEnd: true})
	check(map[string]string{"a": "2", "b": "600"})
	tr.SetHealth("a", false, nil)
	now = now.Add(time.Hour)
	check(map[string]string{"a": "3602", "b": "600"})
}

// A kind of observation of the tests' own, rendered as the locks source's
// are: the collector knows no source.
func init() {
	observation.Register(observation.Kind{Name: "widgets", Title: "Widgets", Key: "widget", Metrics: []observation.Metric{
		{Name: "widget_up", Help: "1 while the widget is up."},
		{Name: "widget_age_seconds", Help: "Seconds since the widget started."},
		{Name: "widget_owner_info", Help: "Who owns the widget.", Label: "owner"},
		{Name: "widget_errors_total", Help: "Errors of the widget.", Counter: true},
	}})
}

// TestObservationsRendered: a source's observations are rendered by their
// registered kind, "since" samples at scrape time; a kind not registered is
// left out.
func TestObservationsRendered(t *testing.T) {
	now := t0.Add(2*time.Hour + 30*time.Minute)
	saved := savedOf(everyKind(t, now))
	c := NewSources(savedFunc(func() *model.Saved { return saved }), func() time.Time { return now })
	want := `
# HELP jobwatch_widget_age_seconds Seconds since the widget started.
# TYPE jobwatch_widget_age_seconds gauge
jobwatch_widget_age_seconds{job_name="stats",widget="/run/stats.widget"} 3600
# HELP jobwatch_widget_errors_total Errors of the widget.
# TYPE jobwatch_widget_errors_total counter
jobwatch_widget_errors_total{job_name="backup",widget="backup"} 2
# HELP jobwatch_widget_owner_info Who owns the widget.
# TYPE jobwatch_widget_owner_info gauge
jobwatch_widget_owner_info{job_name="stats",owner="pid 4300",widget="/run/stats.widget"} 1
# HELP jobwatch_widget_up 1 while the widget is up.
# TYPE jobwatch_widget_up gauge
jobwatch_widget_up{job_name="backup",widget="backup"} 0
jobwatch_widget_up{job_name="stats",widget="/run/stats.widget"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "jobwatch_widget_up", "jobwatch_widget_age_seconds", "jobwatch_widget_owner_info", "jobwatch_widget_errors_total"); err != nil {
		t.Error(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "jobwatch_x" {
			t.Error("an observation of a kind not registered is rendered")
		}
	}
}

// A scrape renders one saved state: a save published while it is written
// (here, after the handler first asks) shows in the next scrape only,
// never as a job's record its source has not counted yet.
func TestHandlerScrapeIsOneSavedState(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	tr := populated(now)
	before := savedOf(tr)
	tr.Apply(model.Batch{Source: "app-runs", Events: []model.Event{{Kind: model.Skip, Job: "stats", Host: "web1", PID: 5, Time: now.Add(-time.Hour), SkipLabel: "locked"}}})
	after := before.With(tr.Changes())
	for _, accept := range []string{acceptText, acceptOM} {
		calls := 0
		h := NewHandler(HandlerOpts{Registry: prometheus.NewRegistry(), Now: func() time.Time { return now }, Saved: func() *model.Saved {
			calls++
			if calls == 1 {
				return before
			}
			return after
		}})
		for i, want := range []*model.Saved{before, after} {
			_, body := get(t, h, accept, "")
			got := map[string]string{}
			for line := range strings.Lines(string(body)) {
				if f := strings.Fields(line); len(f) == 2 {
					got[f[0]] = strings.TrimSuffix(f[1], ".0") // OpenMetrics writes 13.0
				}
			}
			records, skips := got[`jobwatch_source_records_total{source="app-runs"}`], got[`jobwatch_job_skips_total{job_name="stats",reason="locked"}`]
			wantRecords, wantSkips := fmt.Sprint(want.Sources()[0].Records), fmt.Sprint(want.Job("stats").SkipCounts[0])
			if records != wantRecords || skips != wantSkips {
				t.Errorf("%s, scrape %d: records %s, locked skips %s; want %s and %s", mediaType(accept), i+1, records, skips, wantRecords, wantSkips)
			}
		}
		if calls != 2 {
			t.Errorf("%s: two scrapes asked for the saved state %d times, want once each", mediaType(accept), calls)
		}
	}
}

// A cache update of every job lets each old segment go once its successor
// is built, rather than keeping two caches alive to the update's end: at a
// catch-up's end that was a third of the heap at 50,000 jobs.
func TestCacheLetsReplacedSegmentsGo(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	n := 4 * segmentJobs // built by one goroutine
	tr := manyJobs(n, now)
	c := &cache{format: fmtText}
	c.update(savedOf(tr), now)
	first := weak.Make(c.segs[0])
	var evs []model.Event
	for i := range n {
		evs = append(evs, model.Event{Kind: model.Start, Job: fmt.Sprintf("job_%05d", i), Host: "web2", PID: 1 << 20, Time: now})
	}
	tr.Apply(model.Batch{Source: "runs", Events: evs})
	var aliveAtLast []bool
	segmentBuilt = func(i int) {
		runtime.GC()
		aliveAtLast = append(aliveAtLast, first.Value() != nil)
	}
	defer func() { segmentBuilt = nil }()
	segs := c.update(savedOf(tr), now)
	if want := []bool{false, false, false, false}; !slices.Equal(aliveAtLast, want) {
		t.Fatalf("first old segment alive after each segment built: %v, want %v", aliveAtLast, want)
	}
	if len(segs) != 4 || len(c.segs) != 4 {
		t.Fatalf("%d segments, the cache keeps %d, want 4", len(segs), len(c.segs))
	}
}

// A job's lines of one family are kept after their length, one byte when
// short: a job whose lines of a family run to kilobytes (a thousand runs
// in progress, as many as a job keeps) is written as client_golang writes it, and so are the jobs
// of its segment after it.
func TestHandlerLongJobLines(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	tr := manyJobs(2*segmentJobs, now)
	var evs []model.Event
	for k, n := range map[int]int{1: 1, 3: 3, 70: 200, 100: 1000} {
		job := fmt.Sprintf("job_%05d", k)
		for pid := range n {
			evs = append(evs, model.Event{Kind: model.Start, Job: job, Host: "web9", PID: 1<<20 + pid, Time: now.Add(-time.Duration(pid) * time.Millisecond)})
		}
	}
	tr.Apply(model.Batch{Source: "runs", Events: evs})
	saved := savedOf(tr)
	old, cur := servers(func() *model.Saved { return saved }, func() time.Time { return now })
	for _, accept := range []string{acceptText, acceptOM} {
		_, want := get(t, old, accept, "")
		_, got := get(t, cur, accept, "")
		if w, g := sortedLines(want), sortedLines(got); !slices.Equal(w, g) {
			t.Fatalf("%s: %d lines, want %d", mediaType(accept), len(g), len(w))
		}
		if want := fmt.Sprintf(`jobwatch_job_running{job_name="job_00100"} %d`, model.MaxOpenRuns); !bytes.Contains(got, []byte(want)) {
			t.Fatalf("%s: no line %s", mediaType(accept), want)
		}
	}
	_, wantPB := get(t, old, acceptProto, "")
	_, gotPB := get(t, cur, acceptProto, "")
	if w, g := protoFamilies(t, wantPB), protoFamilies(t, gotPB); !slices.Equal(w, g) {
		t.Fatal("protobuf differs from client_golang's")
	}
}
