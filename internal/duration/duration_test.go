package duration

import (
	"testing"
	"time"

	prommodel "github.com/prometheus/common/model"
)

// Format writes what Prometheus writes, and Parse reads it back.
func TestFormat(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, 500 * time.Millisecond, time.Second, 90 * time.Second, time.Hour + 30*time.Minute,
		24 * time.Hour, 8 * 24 * time.Hour, 366 * 24 * time.Hour, 25*time.Hour + 1500*time.Millisecond} {
		got := Format(d)
		if want := prommodel.Duration(d).String(); got != want {
			t.Errorf("Format(%v) = %q, Prometheus writes %q", d, got, want)
		}
		if back, err := Parse(got); err != nil || back != d {
			t.Errorf("Parse(%q) = %v, %v; want %v", got, back, err, d)
		}
	}
	for d, want := range map[time.Duration]string{0: "0s", -time.Minute: "-1m", 1500 * time.Microsecond: "1.5ms"} {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
	}
}
