package checkin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

type rejects struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *rejects) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[reason]++
}

func newReceiver(t *testing.T, dir string, rej *rejects) *Receiver {
	t.Helper()
	o := Options{Dir: dir, Now: func() time.Time { return t0 }, MaxBody: 1000}
	if rej != nil {
		o.OnReject = rej.add
	}
	r, err := OpenReceiver(o)
	if err != nil {
		t.Fatal(err)
	}
	r.SetJobs([]string{"backup", "sync"})
	return r
}

func spooled(t *testing.T, dir string) []spoolRecord {
	t.Helper()
	lines, _, err := readFrom(dir, Position{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]spoolRecord, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal(l, &out[i]); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
	}
	return out
}

func do(r http.Handler, method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr = "192.0.2.7:40000"
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w
}

const rid = "0b6f1d8e-4a8e-4c39-9f1e-5c2a7d3e9b10"

func TestCheckinURLs(t *testing.T) {
	dir := t.TempDir()
	r := newReceiver(t, dir, nil)
	defer r.Close()
	three := 3
	zero := 0
	for _, tc := range []struct {
		method, target, body string
		want                 spoolRecord
	}{
		{"GET", "/ping/backup", "", spoolRecord{Event: "end", Status: "success"}},
		{"POST", "/ping/backup/start?rid=" + strings.ToUpper(rid) + "&host=web1&pid=42", "", spoolRecord{Event: "start", RunID: rid, Host: "web1", PID: 42}},
		{"POST", "/ping/backup/fail", "disk full\n", spoolRecord{Event: "end", Status: "failure", Output: "disk full\n"}},
		{"GET", "/ping/backup/3", "", spoolRecord{Event: "end", Status: "failure", ExitCode: &three}},
		{"GET", "/ping/sync/0", "", spoolRecord{Event: "end", Status: "success", ExitCode: &zero}},
		{"GET", "/ping/sync/skip?reason=locked", "", spoolRecord{Event: "skip", Reason: "locked"}},
		{"GET", "/ping/sync/skip", "", spoolRecord{Event: "skip", Reason: "other"}},
		{"HEAD", "/ping/sync", "", spoolRecord{Event: "end", Status: "success"}},
	} {
		if w := do(r, tc.method, tc.target, tc.body); w.Code != 200 {
			t.Fatalf("%s %s: %d %s", tc.method, tc.target, w.Code, w.Body)
		}
		got := spooled(t, dir)
		last := got[len(got)-1]
		tc.want.V, tc.want.Time, tc.want.Job = 1, t0, strings.Split(tc.target, "/")[2]
		tc.want.Job, _, _ = strings.Cut(tc.want.Job, "?")
		if tc.want.Host == "" {
			tc.want.Host = "192.0.2.7"
		}
		a, _ := json.Marshal(last)
		b, _ := json.Marshal(tc.want)
		if string(a) != string(b) {
			t.Errorf("%s %s:\n got %s\nwant %s", tc.method, tc.target, a, b)
		}
	}
}

func TestCheckinRejects(t *testing.T) {
	dir := t.TempDir()
	var rej rejects
	r := newReceiver(t, dir, &rej)
	defer r.Close()
	for _, tc := range []struct {
		method, target, body string
		hdr                  []string
		code                 int
		reason               string
	}{
		{"GET", "/ping/nosuchjob", "", nil, 404, RejectUnknownJob},
		{"GET", "/ping/", "", nil, 404, RejectBadPath},
		{"GET", "/ping/backup/start/extra", "", nil, 404, RejectBadPath},
		{"GET", "/ping/backup/256", "", nil, 400, RejectBadExitCode},
		{"GET", "/ping/backup/-1", "", nil, 400, RejectBadExitCode},
		{"GET", "/ping/backup/007", "", nil, 400, RejectBadExitCode},
		{"GET", "/ping/backup/finish", "", nil, 400, RejectBadExitCode},
		{"GET", "/ping/backup?rid=not-a-uuid", "", nil, 400, RejectBadRunID},
		{"GET", "/ping/backup?host=a%20b", "", nil, 400, RejectBadHost},
		{"GET", "/ping/backup?pid=0", "", nil, 400, RejectBadPID},
		{"GET", "/ping/backup/skip?reason=" + strings.Repeat("x", 20), "", nil, 400, RejectBadReason},
		{"GET", "/ping/backup?reason=locked", "", nil, 400, RejectBadReason},
		{"POST", "/ping/backup", strings.Repeat("x", 1001), nil, 413, RejectBodyTooLarge},
		{"DELETE", "/ping/backup", "", nil, 405, RejectMethod},
		{"POST", "/ping/backup", "", []string{"Sec-Fetch-Site", "cross-site"}, 403, RejectCrossSite},
		{"POST", "/ping/backup", "", []string{"Origin", "https://evil.example"}, 403, RejectCrossSite},
		// Browsers send Origin: null from sandboxed frames and some redirects.
		{"POST", "/ping/backup", "", []string{"Origin", "null"}, 403, RejectCrossSite},
		{"GET", "/ping/backup", "", []string{"Origin", "null"}, 403, RejectCrossSite},
	} {
		w := do(r, tc.method, tc.target, tc.body, tc.hdr...)
		if w.Code != tc.code {
			t.Errorf("%s %s: %d, want %d (%s)", tc.method, tc.target, w.Code, tc.code, w.Body)
		}
	}
	if got := spooled(t, dir); len(got) != 0 {
		t.Errorf("rejected check-ins were spooled: %+v", got)
	}
	want := map[string]int{RejectUnknownJob: 1, RejectBadPath: 2, RejectBadExitCode: 4, RejectBadRunID: 1, RejectBadHost: 1,
		RejectBadPID: 1, RejectBadReason: 2, RejectBodyTooLarge: 1, RejectMethod: 1, RejectCrossSite: 4}
	if fmt.Sprint(rej.n) != fmt.Sprint(want) {
		t.Errorf("rejects %v, want %v", rej.n, want)
	}
	// Same-origin browsers and tools without the headers are served.
	if w := do(r, "POST", "/ping/backup", "", "Sec-Fetch-Site", "same-origin", "Origin", "http://example.com"); w.Code != 200 {
		t.Errorf("same-origin: %d", w.Code)
	}
}

func TestCheckinOutputExcerpt(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenReceiver(Options{Dir: dir, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetJobs([]string{"backup"})
	body := strings.Repeat("a", 50<<10) + "the error at the end"
	if w := do(r, "POST", "/ping/backup/fail", body); w.Code != 200 {
		t.Fatal(w.Code)
	}
	got := spooled(t, dir)[0].Output
	if len(got) != model.OutputExcerpt || !strings.HasSuffix(got, "the error at the end") {
		t.Errorf("excerpt of %d bytes ending %q", len(got), got[len(got)-30:])
	}
}

func TestCheckinRetriesAppliedOnce(t *testing.T) {
	dir := t.TempDir()
	r := newReceiver(t, dir, nil)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if w := do(r, "POST", "/ping/backup/start?rid="+rid, ""); w.Code != 200 {
				t.Errorf("retry: %d", w.Code)
			}
		}()
	}
	wg.Wait()
	do(r, "POST", "/ping/backup?rid="+rid, "")
	if got := spooled(t, dir); len(got) != 2 {
		t.Fatalf("%d records spooled for one start and one end, retried", len(got))
	}
	r.Close()

	// After a restart, a retry of what was acknowledged before is still
	// applied once.
	r = newReceiver(t, dir, nil)
	defer r.Close()
	do(r, "POST", "/ping/backup?rid="+rid, "")
	// The same run's end reported again with another result is one end too.
	do(r, "POST", "/ping/backup/fail?rid="+rid, "")
	do(r, "POST", "/ping/backup/start?rid=1b6f1d8e-4a8e-4c39-9f1e-5c2a7d3e9b10", "")
	if got := spooled(t, dir); len(got) != 3 {
		t.Fatalf("%d records after retries across a restart, want 3", len(got))
	}
}

func TestSpoolTornTailAndSegments(t *testing.T) {
	dir := t.TempDir()
	sp, err := openSpool(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := sp.Append([]byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`+"\n", i, strings.Repeat("p", 30)))); err != nil {
			t.Fatal(err)
		}
	}
	sp.Close()
	segs, _ := segments(dir)
	if len(segs) < 3 {
		t.Fatalf("segments %v: the spool never rolled over", segs)
	}
	// A crash in the middle of a write leaves a torn line.
	last := filepath.Join(dir, segmentName(segs[len(segs)-1]))
	f, _ := os.OpenFile(last, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"n":10,"pa`)
	f.Close()
	lines, pos, err := readFrom(dir, Position{}, 100)
	if err != nil || len(lines) != 10 {
		t.Fatalf("read %d lines (%v) with a torn tail, want 10", len(lines), err)
	}
	sp, err = openSpool(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	sp.Append([]byte(`{"n":11}` + "\n"))
	sp.Close()
	more, _, err := readFrom(dir, pos, 100)
	if err != nil || len(more) != 1 || string(more[0]) != `{"n":11}` {
		t.Fatalf("after reopening: %q %v", more, err)
	}
	// Reading in small steps gives the same lines, in order.
	var all []string
	p := Position{}
	for {
		got, next, err := readFrom(dir, p, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, l := range got {
			all = append(all, string(l))
		}
		p = next
	}
	if len(all) != 11 || !strings.HasPrefix(all[0], `{"n":0,`) || all[10] != `{"n":11}` {
		t.Errorf("stepwise read: %d lines %q", len(all), all)
	}
	if err := removeBefore(dir, p.Segment); err != nil {
		t.Fatal(err)
	}
	if segs, _ := segments(dir); len(segs) != 1 {
		t.Errorf("segments left %v", segs)
	}
}

func TestSpoolGroupCommit(t *testing.T) {
	sp, err := openSpool(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sp.Append([]byte(fmt.Sprintf("%d\n", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	lines, _, _ := readFrom(sp.dir, Position{}, 1000)
	seen := map[string]bool{}
	for _, l := range lines {
		seen[string(l)] = true
	}
	if len(lines) != 200 || len(seen) != 200 {
		t.Errorf("%d lines, %d distinct, want 200", len(lines), len(seen))
	}
}

type sink struct {
	mu      sync.Mutex
	batches []model.Batch
	applied chan struct{}
}

func (s *sink) Apply(b model.Batch) {
	s.mu.Lock()
	s.batches = append(s.batches, b)
	s.mu.Unlock()
	s.applied <- struct{}{}
}
func (s *sink) SetHealth(string, bool, error) {}

func TestSourceAppliesSpool(t *testing.T) {
	dir := t.TempDir()
	r := newReceiver(t, dir, nil)
	defer r.Close()
	do(r, "POST", "/ping/backup/start?rid="+rid+"&pid=9", "")
	do(r, "POST", "/ping/backup/2?rid="+rid, "boom")

	snk := &sink{applied: make(chan struct{}, 10)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Source().Run(ctx, nil, snk) }()
	<-snk.applied
	do(r, "GET", "/ping/sync/skip?reason=locked", "")
	<-snk.applied
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var evs []model.Event
	for _, b := range snk.batches {
		evs = append(evs, b.Events...)
	}
	// The output is handed over as a reference to its spool record, which
	// it is read from.
	spooled, _, _ := readLines(dir, Position{}, 10)
	ref := "checkin:1:" + strconv.FormatInt(spooled[1].at.Offset, 10)
	if out, err := r.ReadOutput(ref); err != nil || out != "boom" {
		t.Errorf("ReadOutput(%s) = %q, %v; want boom", ref, out, err)
	}
	want := []model.Event{
		{Time: t0, Job: "backup", Kind: model.Start, Host: "192.0.2.7", PID: 9, RunID: rid},
		{Time: t0, Job: "backup", Kind: model.End, Host: "192.0.2.7", RunID: rid, Result: model.Failure, ExitCode: 2, HasExitCode: true, OutputRef: ref},
		{Time: t0, Job: "sync", Kind: model.Skip, Host: "192.0.2.7", Reason: "locked", SkipLabel: "locked"},
	}
	if fmt.Sprintf("%+v", evs) != fmt.Sprintf("%+v", want) {
		t.Errorf("events\n got %+v\nwant %+v", evs, want)
	}
	// From the last batch's position, nothing is read again.
	last := snk.batches[len(snk.batches)-1].Position
	var pos Position
	json.Unmarshal(last, &pos)
	lines, _, _ := readFrom(dir, pos, 10)
	if len(lines) != 0 {
		t.Errorf("position %s leaves %d lines to read again", last, len(lines))
	}
}

// The source says AtEnd on every batch that reads the spool to its end: a
// check-in's, the last of the replay at start (alone when the replay's
// last batch was full, or when there was nothing to replay), and on no
// batch before it; nothing while idle.
func TestSourceAtEnd(t *testing.T) {
	type note struct {
		events int
		atEnd  bool
	}
	for _, tc := range []struct {
		spooled int
		want    []note
	}{
		{0, []note{{0, true}}},
		{3, []note{{3, true}}},
		{batchLines, []note{{batchLines, false}, {0, true}}},
		{batchLines + 5, []note{{batchLines, false}, {5, true}}},
	} {
		t.Run(fmt.Sprintf("%d spooled", tc.spooled), func(t *testing.T) {
			dir := t.TempDir()
			r := newReceiver(t, dir, nil)
			defer r.Close()
			line, err := json.Marshal(spoolRecord{V: spoolVersion, Time: t0, Job: "sync", Event: "skip", Reason: "locked"})
			if err != nil {
				t.Fatal(err)
			}
			line = append(line, '\n')
			var wg sync.WaitGroup
			for range tc.spooled {
				wg.Go(func() {
					if err := r.spool.Append(line); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()

			snk := &sink{applied: make(chan struct{}, 10)}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- r.Source().Run(ctx, nil, snk) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			// take waits for n more batches and returns all applied so far.
			take := func(n int) []note {
				t.Helper()
				for range n {
					testproc.Receive(t, snk.applied, 10*time.Second, "a batch")
				}
				snk.mu.Lock()
				defer snk.mu.Unlock()
				var out []note
				for _, b := range snk.batches {
					out = append(out, note{len(b.Events), b.AtEnd})
					if b.AtEnd && len(b.Events) == 0 && b.Position != nil {
						t.Errorf("an AtEnd batch without events carries a position %s", b.Position)
					}
				}
				return out
			}
			if got := take(len(tc.want)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("batches of the replay %v, want %v", got, tc.want)
			}
			// Idle, the source hands nothing over: the next batch is the
			// next check-in's.
			do(r, "POST", "/ping/backup/start?rid="+rid, "")
			want := append(tc.want, note{1, true})
			if got := take(1); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("batches after a check-in %v, want %v", got, want)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"time":"2026-12-01T10:00:00Z","job":"a","event":"end","status":"success","exit_code":0}`))
	f.Add([]byte(`{"v":1,"time":"2026-12-01T10:00:00Z","job":"a","event":"skip","reason":"locked"}`))
	f.Add([]byte(`{"v":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := decode(b)
		if err == nil && (ev.Job == "" || ev.Kind == 0) {
			t.Fatalf("decoded %q into %+v", b, ev)
		}
	})
}

func FuzzHandler(f *testing.F) {
	for _, s := range []string{"/ping/backup", "/ping/backup/start?rid=" + rid, "/ping/backup/255", "/ping/x/skip?reason=locked", "/ping//"} {
		f.Add(s)
	}
	dir := f.TempDir()
	r, err := OpenReceiver(Options{Dir: dir, MaxSegment: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	defer r.Close()
	r.SetJobs([]string{"backup", "x"})
	f.Fuzz(func(t *testing.T, target string) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n\t#") {
			return
		}
		req, err := http.NewRequest("GET", "http://h"+target, http.NoBody)
		if err != nil {
			return
		}
		req.RemoteAddr = "127.0.0.1:1"
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code == 200 {
			lines, _, _ := readFrom(dir, Position{}, 1<<30)
			if _, err := decode(lines[len(lines)-1]); err != nil {
				t.Fatalf("%s accepted, spooled a record that does not decode: %v", target, err)
			}
		}
	})
}

// TestRetryAfterSegmentChange: a check-in acknowledged just before the spool
// started a new segment is still known after a restart, and its retry is
// not applied again.
func TestRetryAfterSegmentChange(t *testing.T) {
	dir := t.TempDir()
	open := func() *Receiver {
		r, err := OpenReceiver(Options{Dir: dir, Now: func() time.Time { return t0 }, MaxSegment: 1})
		if err != nil {
			t.Fatal(err)
		}
		r.SetJobs([]string{"backup"})
		return r
	}
	r := open()
	if w := do(r, "POST", "/ping/backup/start?rid="+rid, ""); w.Code != 200 {
		t.Fatalf("start: %d", w.Code)
	}
	// Every later append starts a new segment (MaxSegment 1).
	if w := do(r, "POST", "/ping/backup/start?rid=1b6f1d8e-4a8e-4c39-9f1e-5c2a7d3e9b10", ""); w.Code != 200 {
		t.Fatalf("second start: %d", w.Code)
	}
	r.Close()
	if segs, _ := segments(dir); len(segs) != 2 {
		t.Fatalf("segments %v, want 2", segs)
	}
	r = open()
	defer r.Close()
	if w := do(r, "POST", "/ping/backup/start?rid="+rid, ""); w.Code != 200 {
		t.Fatalf("retry: %d", w.Code)
	}
	if got := spooled(t, dir); len(got) != 2 {
		t.Fatalf("%d records after a retry of the first segment's check-in across a restart, want 2", len(got))
	}
}
