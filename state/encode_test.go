package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
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
