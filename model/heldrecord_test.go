package model

import (
	"cmp"
	"math"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// A held record comes back as the Event it was made of, but for its job's
// name: values its small fields hold and values they do not.
func TestHeldRoundTrip(t *testing.T) {
	base := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)
	for _, ev := range []Event{
		{Time: base, Kind: Start, Host: "web1", PID: 7, RunID: "r1"},
		{Time: base.In(time.Local), Kind: Start, Host: "web1", PID: 7, EndUnlogged: true, late: true},
		{Time: base.In(time.FixedZone("CEST", 2*3600)), Kind: End, Result: Success, ExitCode: 0, HasExitCode: true, Duration: time.Second, HasDuration: true},
		{Time: base, Kind: End, Result: Unknown, Output: "out", OutputRef: "ref"},
		{Time: base, Kind: Skip, Reason: "locked", SkipLabel: "locked", Lock: "file", Holder: "web2", HolderPID: 9, LockTTL: time.Minute},
		{Time: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC), Kind: End, Result: "from a newer version", PID: math.MaxInt32 + 1, ExitCode: math.MinInt32 - 1},
	} {
		h := NewHeld(&ev, "log")
		got := h.Event()
		if !reflect.DeepEqual(got, ev) || got.Time.Location().String() != ev.Time.Location().String() || h.Source() != "log" {
			t.Errorf("held %+v came back as %+v from %q", ev, got, h.Source())
		}
	}
	if size := unsafe.Sizeof(Held{}); size > 88 {
		t.Errorf("a held record is %d bytes, want at most 88 (140,000 are held at 50,000 jobs)", size)
	}
}

// compareHeld orders held records as compareEvents orders their events,
// then by source.
func TestCompareHeldAsEvents(t *testing.T) {
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	evs := []Event{
		{Time: base, Kind: Start, Host: "a", PID: 1},
		{Time: base, Kind: End, Host: "a", PID: 1, Result: Success},
		{Time: base, Kind: End, Host: "a", PID: 1, Result: Failure, ExitCode: 2, HasExitCode: true},
		{Time: base, Kind: End, Host: "a", PID: 1, Result: Failure, Output: "x"},
		{Time: base, Kind: Skip, Host: "a", PID: 1, Reason: "locked"},
		{Time: base, Kind: Start, Host: "b", PID: 1},
		{Time: base, Kind: Start, Host: "a", PID: math.MaxInt32 + 5},
		{Time: base.Add(time.Nanosecond), Kind: Start, RunID: "r"},
		{Time: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC), Kind: Start},
	}
	for i := range evs {
		for j := range evs {
			for _, src := range [][2]string{{"x", "x"}, {"x", "y"}} {
				a, b := NewHeld(&evs[i], src[0]), NewHeld(&evs[j], src[1])
				want := compareEvents(&evs[i], &evs[j])
				if want == 0 {
					want = cmp.Compare(src[0], src[1])
				}
				if got := compareHeld(&a, &b); got != want {
					t.Errorf("compareHeld(%+v, %+v) = %d, want %d", evs[i], evs[j], got, want)
				}
				if got := compareHeldTo(&a, &evs[j], src[1]); got != want {
					t.Errorf("compareHeldTo(%+v, %+v) = %d, want %d", evs[i], evs[j], got, want)
				}
			}
		}
	}
}
