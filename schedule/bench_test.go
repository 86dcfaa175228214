package schedule

import (
	"testing"
	"time"
)

var benchZones = []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Shanghai", "UTC"}

var benchCron = []string{"30 2 * * *", "*/5 * * * *", "0 9 * * MON-FRI", "15 */6 * * *", "@hourly", "0 0 1 * *", "0 12 13 * 5"}

var benchCalendar = [][]string{
	{"Mon..Fri 09:00"}, {"*-*-* 03:00:00"}, {"*:0/15"}, {"daily"}, {"Sat *-*-1..7 18:00:00"},
	{"*-*~1 23:00"}, {"Mon 06:00", "Thu 18:30"},
}

// benchJobs builds n schedules; kind 0 mixes every, cron and OnCalendar.
func benchJobs(b *testing.B, n, kind int) []Schedule {
	b.Helper()
	jobs := make([]Schedule, n)
	for i := range jobs {
		loc := mustLoc(b, benchZones[i%len(benchZones)])
		k := kind
		if k == 0 {
			k = 1 + i%3
		}
		var err error
		switch k {
		case 1:
			jobs[i] = Every(time.Duration(1+i%60) * time.Minute)
		case 2:
			jobs[i], err = ParseCron(benchCron[i%len(benchCron)], loc, Debian)
		case 3:
			jobs[i], err = ParseOnCalendar(benchCalendar[i%len(benchCalendar)], loc)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return jobs
}

// BenchmarkDeadline10k computes, for 10,000 jobs, the next expected run
// and the deadline (Next applied twice) from one time, as a scrape does.
func BenchmarkDeadline10k(b *testing.B) {
	const n = 10000
	from := time.Date(2026, 11, 30, 11, 17, 0, 0, time.UTC)
	for _, kind := range []struct {
		name string
		k    int
	}{{"mixed", 0}, {"every", 1}, {"cron", 2}, {"oncalendar", 3}} {
		b.Run(kind.name, func(b *testing.B) {
			jobs := benchJobs(b, n, kind.k)
			var sink time.Time
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				at := from.Add(time.Duration(i%1000) * 37 * time.Minute)
				for _, s := range jobs {
					n1 := s.Next(at)
					sink = s.Next(n1)
				}
			}
			_ = sink
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/job")
		})
	}
}

func BenchmarkPrev10k(b *testing.B) {
	const n = 10000
	from := time.Date(2026, 11, 30, 11, 17, 0, 0, time.UTC)
	jobs := benchJobs(b, n, 0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		at := from.Add(time.Duration(i%1000) * 37 * time.Minute)
		for _, s := range jobs {
			s.Prev(at)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/job")
}
