package testproc

import "runtime"

// Allocated is how many bytes of heap f allocated (runtime.MemStats'
// TotalAlloc across it, so memory freed meanwhile still counts), for tests
// that bound what reading something costs. Other goroutines' allocations
// meanwhile count too: a bound should be far from the cost it rules out.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
