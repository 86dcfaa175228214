package discover

import (
	"time"

	"github.com/jobwatch/jobwatch/model"
)

// P99 returns the 99th percentile of the run durations h counts, rounded
// up to the bound of the bucket it falls in (the largest bound when it is
// above all of them), and false when h counts no run. It is how the caller
// fills Options.P99 from jobwatch's job model.
func P99(h model.Histogram) (time.Duration, bool) {
	bounds := model.DurationBuckets
	if h.Count == 0 || len(h.Counts) != len(bounds)+1 {
		return 0, false
	}
	need := (h.Count*99 + 99) / 100 // ceil(0.99 * count)
	var cum uint64
	for i, c := range h.Counts {
		cum += c
		if cum >= need {
			b := bounds[min(i, len(bounds)-1)]
			return time.Duration(b * float64(time.Second)), true
		}
	}
	return time.Duration(bounds[len(bounds)-1] * float64(time.Second)), true
}
