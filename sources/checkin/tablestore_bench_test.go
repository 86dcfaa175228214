package checkin

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/mariadbtest"
)

// BenchmarkCheckinReplicas sends check-ins (a start and an end with a run
// id per run) over real HTTP from 32 concurrent clients spread over two
// receivers, as two replicas behind a load balancer, and reports check-ins
// a second: with store: mysql (group commit), each with its own spool
// (the default), and with one transaction per check-in (the baseline
// group commit is measured against), all on one MariaDB in one run
// (BENCHMARKS.md, "Check-ins over two replicas").
func BenchmarkCheckinReplicas(b *testing.B) {
	srv := mariadbtest.Start(b)
	for _, mode := range []string{"table-group-commit", "table-one-row-per-transaction", "spool"} {
		b.Run(mode, func(b *testing.B) {
			var replicas [2]*Receiver
			db := jobRunsDB(b, srv)
			for i := range replicas {
				r, err := OpenReceiver(Options{Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				r.SetJobs([]string{"backup"})
				if mode != "spool" {
					r.useStore(tableConfig(srv, db))
					r.table.Load().single = mode == "table-one-row-per-transaction"
				}
				defer r.Close()
				replicas[i] = r
			}
			benchReplicas(b, replicas)
		})
	}
}

// benchReplicas runs b.N check-ins from 32 clients, each client on one of
// the two replicas.
func benchReplicas(b *testing.B, replicas [2]*Receiver) {
	var urls [2]string
	for i, r := range replicas {
		s := httptest.NewServer(r)
		defer s.Close()
		urls[i] = s.URL
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const clients = 32
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := next.Add(2) - 2; n < int64(b.N); n = next.Add(2) - 2 {
				rid := fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
				for _, verb := range []string{"start", "0"} {
					resp, err := client.Get(urls[c%2] + "/ping/backup/" + verb + "?rid=" + rid)
					if err != nil {
						b.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "checkins/s")
}
