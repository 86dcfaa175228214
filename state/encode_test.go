package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// TestEncodeAsMarshal: appendEntry writes json.Marshal's bytes for entries
// of every shape: each field empty or not, strings needing escapes, floats
// of every magnitude, times of every kind.
func TestEncodeAsMarshal(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 7))
		var e entry
		fill(r, reflect.ValueOf(&e).Elem(), 0)
		checkEncode(t, &e)
	}
}

func FuzzEncodeAsMarshal(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		r := rand.New(rand.NewPCG(a, b))
		var e entry
		fill(r, reflect.ValueOf(&e).Elem(), 0)
		checkEncode(t, &e)
	})
}

func checkEncode(t *testing.T, e *entry) {
	t.Helper()
	want, werr := json.Marshal(e)
	got, gerr := appendEntry([]byte("prefix"), e)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("errors differ: json.Marshal %v, appendEntry %v", werr, gerr)
	}
	if werr != nil {
		if string(got) != "prefix" {
			t.Fatalf("appendEntry failed, yet returned %q", got)
		}
		return
	}
	if !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("appendEntry differs from json.Marshal:\n got %s\nwant %s", got[len("prefix"):], want)
	}
	// The same jobs made as they are written (a save's entry).
	lazy := *e
	lazy.Jobs, lazy.jobs = nil, &lazyJobs{names: slices.Sorted(maps.Keys(e.Jobs)), record: func(n string) *jobRecord { return e.Jobs[n] }}
	if got, err := appendEntry(nil, &lazy); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("appendEntry of jobs made as written differs from json.Marshal (err %v):\n got %s\nwant %s", err, got, want)
	}
}

var (
	fillStrings = []string{"", "web1", "job_00001", `a"b\c`, "<&>", "tab\there\n", "\x00\x1f", "é ü", "\u2028\u2029", "\xff\xfe", "日本"}
	fillFloats  = []float64{0, math.Copysign(0, -1), 0.2, 1, 40.5, 1e-7, -3e-9, 1e20, 1e21, 1.5e300, 123456789.125, math.SmallestNonzeroFloat64}
	fillTimes   = []time.Time{{}, time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.UTC),
		time.Date(2026, 6, 1, 1, 2, 3, 4000, time.FixedZone("", 2*3600)), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}
)

// fill gives v random contents, often empty, depth limiting its nesting.
func fill(r *rand.Rand, v reflect.Value, depth int) {
	if r.IntN(4) == 0 {
		return // zero: omitempty and omitzero
	}
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(fillTimes[r.IntN(len(fillTimes))]))
		return
	}
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.Set(reflect.ValueOf(json.RawMessage([]string{`{"offset": 12, "inode":3}`, `"<x>"`, `[1, 2]`, `{bad`}[r.IntN(4)])))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fillStrings[r.IntN(len(fillStrings))])
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{1, -1, 42, math.MaxInt64, math.MinInt64}[r.IntN(5)])
	case reflect.Uint64:
		v.SetUint([]uint64{1, 7, math.MaxUint64}[r.IntN(3)])
	case reflect.Float64:
		v.SetFloat(fillFloats[r.IntN(len(fillFloats))])
	case reflect.Pointer:
		if depth < 4 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(r, v.Elem(), depth+1)
		}
	case reflect.Slice:
		n := r.IntN(4)
		if n == 0 && r.IntN(2) == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0)) // empty, not nil
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(r, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range r.IntN(4) {
			k := reflect.New(v.Type().Key()).Elem()
			k.SetString(fillStrings[r.IntN(len(fillStrings))])
			e := reflect.New(v.Type().Elem()).Elem()
			fill(r, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Array:
		for i := range v.Len() {
			fill(r, v.Index(i), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); !f.IsExported() && !f.Anonymous {
				continue // entry.jobs: checkEncode writes Jobs through it
			}
			fill(r, v.Field(i), depth+1)
		}
	default:
		panic("fill: no case for " + v.Type().String())
	}
}

// BenchmarkEncodeEntry: one log entry of 33 jobs as a stream at 200
// records a second commits them (each with two runs), by appendEntry and
// by json.Marshal.
func BenchmarkEncodeEntry(b *testing.B) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.UTC)
	d, code := 0.2, 0
	e := &entry{Jobs: map[string]*jobRecord{}}
	for i := range 33 {
		recent := []recentRecord{{Start: at, End: at.Add(time.Second), Duration: &d, Result: "success", Host: "web1", PID: 100 + i, ExitCode: &code}}
		recent = append(recent, recent[0])
		e.Jobs[fmt.Sprintf("job_%05d", i)] = &jobRecord{FirstWatched: at, LastStart: at, LastSuccess: at, LastSuccessStart: at,
			LastDuration: &d, LastExitCode: &code, Runs: map[string]uint64{"success": 2},
			Durations: histogramRecord{Counts: []uint64{0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0}, Sum: 0.4, Count: 2},
			Sources:   []string{"runs"}, Recent: recent, DurationHistory: []float64{0.2, 0.2}, DecidedUntil: at}
	}
	e.Sources = map[string]*sourceRecord{"runs": {Records: 20000, Position: json.RawMessage(`{"offset":123456,"inode":42}`)}}
	b.Run("appendEntry", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = appendEntry(buf[:0], e)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(e)
		}
	})
}

// TestRecordFilledAgain: a record filled for one job and then for another
// (as a save writes its jobs, through one record) is written as a new
// record of the second, whatever the first held.
func TestRecordFilledAgain(t *testing.T) {
	snap := appendFrame(nil, must(json.Marshal(header{Format: formatName, Version: Version, Kind: "snapshot", Generation: 1})))
	snap = appendFrame(snap, []byte(`{"jobs":{`+
		`"full":{"first_watched":"2026-11-30T10:00:00Z","last_duration":2,"last_exit_code":1,"runs":{"success":2,"failure":1},`+
		`"skips":3,"skips_by_reason":{"lock_held":1,"other":1,"maintenance_window":1},"lock_lost":{"redis":1},"duplicates":{"same_host":1},`+
		`"durations":{"counts":[1,2],"sum":3,"count":3},"lost_runs":[{"run_id":"a"},{"host":"h","pid":3}],`+
		`"recent_slots":[{"slot":"2026-11-30T10:00:00Z","hosts":["h1","h2"]}],"sources":["runs"],`+
		`"open":[{"key":{"run_id":"r"},"run_id":"r","start":"2026-11-30T10:00:00Z","source":"runs"},{"key":{"host":"h","pid":4},"host":"h","pid":4,"start":"2026-11-30T10:01:00Z","source":"runs"}],`+
		`"recent":[{"start":"2026-11-30T09:00:00Z","end":"2026-11-30T09:00:02Z","result":"success","duration_seconds":2},{"end":"2026-11-30T09:30:00Z","result":"skipped","reason":"lock_held"}],`+
		`"duration_history":[2,1],"pending":[{"source":"runs","time":"2026-11-30T10:02:00Z","kind":"start","host":"web1","pid":2},{"kind":"end","result":"success","exit_code":0,"as_before":true}]},`+
		`"bare":{"first_watched":"2026-11-30T10:00:00Z"},`+
		`"one":{"first_watched":"2026-11-30T10:00:00Z","runs":{"timeout":1},"recent":[{"end":"2026-11-30T09:00:00Z","result":"timeout"}],"pending":[{"source":"runs","time":"2026-11-30T10:03:00Z","kind":"skip","host":"web2"}]}`+
		`},"end":true}`))
	st := &model.Snapshot{Jobs: map[string]model.SavedJob{}, Sources: map[string]*model.SourceState{}}
	if _, err := readSnapshot(snap, st); err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 3 {
		t.Fatalf("read %d jobs, want 3", len(st.Jobs))
	}
	views := map[string]*model.JobView{}
	for n, j := range st.Jobs {
		views[n] = &model.JobView{Spec: &model.JobSpec{Name: n}, JobState: &j.JobState, History: j.History, Open: j.Open, Pending: j.Pending, DecidedUntil: j.DecidedUntil}
	}
	encode := func(r *jobRecord) string {
		o := &jsonOut{}
		o.job(r)
		return string(o.b)
	}
	for first, a := range views {
		for second, b := range views {
			for _, prev := range []*model.JobView{nil, a} {
				var scratch jobRecord
				scratch.fill(a, nil)
				if got, want := encode(scratch.fill(b, prev)), encode(jobToRecord(b, prev)); got != want {
					t.Errorf("%s after %s (prev %v): got\n%s\nwant\n%s", second, first, prev != nil, got, want)
				}
			}
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
