package state

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/jobwatch/jobwatch/model"
)

// TestDurationsNativeSaved: a histogram's native buckets and zero count
// are saved and load as they were.
func TestDurationsNativeSaved(t *testing.T) {
	var h model.Histogram
	for _, d := range []float64{0, 0.3, 2, 2, 7200, 1e6} {
		h.Observe(d)
	}
	o := jsonOut{}
	r := histogramOf(&h)
	o.histogram(&r)
	var back histogramRecord
	if err := json.Unmarshal(o.b, &back); err != nil {
		t.Fatalf("%s: %v", o.b, err)
	}
	if got := back.toModel(); !reflect.DeepEqual(got, h) {
		t.Errorf("saved %s, loaded %+v, want %+v", o.b, got, h)
	}
}

// TestDurationsSavedBeforeNative: a histogram saved before the native
// buckets loads with each classic count at its bound's native bucket (the
// count above the last bound one bucket above it), so the native
// histogram counts every run.
func TestDurationsSavedBeforeNative(t *testing.T) {
	var r histogramRecord
	// 2 runs in (0.1, 0.5], 1 in (1, 5], 1 above 86400.
	saved := `{"counts":[0,2,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,1],"sum":90000,"count":4}`
	if err := json.Unmarshal([]byte(saved), &r); err != nil {
		t.Fatal(err)
	}
	h := r.toModel()
	want := []model.NativeBucket{
		{Key: model.NativeKey(0.5), Count: 2},
		{Key: model.NativeKey(5), Count: 1},
		{Key: model.NativeKey(86400) + 1, Count: 1},
	}
	if !reflect.DeepEqual(h.Native, want) || h.Zero != 0 || h.Count != 4 {
		t.Errorf("native %v zero %d count %d, want %v, 0, 4", h.Native, h.Zero, h.Count, want)
	}
}
