package testproc

import (
	"flag"
	"runtime"
	"strconv"
)

// DefaultParallel sets -test.parallel to n (GOMAXPROCS if more) unless the
// command line gives it, for packages whose tests mostly wait on the
// programs they start (timers, leases, sleeping jobs) rather than on the
// CPU: go test's default, GOMAXPROCS, runs only two at once on a 2-core
// machine. Call it from TestMain, which it parses the flags for.
func DefaultParallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
	}
}
