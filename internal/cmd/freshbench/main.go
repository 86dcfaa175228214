// Command freshbench measures how soon a record appended alone to a run
// log shows on /metrics, in jobwatch and in mtail watching the same file
// at the same time. It is a benchmark tool (scripts/bench-mtail.sh runs
// it), not part of jobwatch.
//
// It appends -records end records of one job, -apart apart, each dated
// -age before it is written (past the run log's late window, so jobwatch
// decides it as it reads it rather than holding it for its watermark), and
// after each one scrapes both servers every 2 ms, each on its own,
// until their runs counter of that job shows it. It prints the median,
// 90th percentile and maximum of each, and mtail's median over jobwatch's.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	logPath := flag.String("log", "", "the run log both servers read")
	jw := flag.String("jobwatch", "", "jobwatch's /metrics URL")
	mt := flag.String("mtail", "", "mtail's /metrics URL")
	job := flag.String("job", "job_00", "the job the records are of")
	records := flag.Int("records", 40, "records to append")
	apart := flag.Duration("apart", 300*time.Millisecond, "time between two records")
	age := flag.Duration("age", 5*time.Second, "how long before it is written a record is dated")
	timeout := flag.Duration("timeout", 10*time.Second, "how long a record may take to show")
	verbose := flag.Bool("v", false, "print how long each record took to show")
	flag.Parse()
	if *logPath == "" || *jw == "" || *mt == "" {
		fmt.Fprintln(os.Stderr, "freshbench: -log, -jobwatch and -mtail are required")
		os.Exit(2)
	}
	if err := run(*logPath, *job, servers{"jobwatch": *jw, "mtail": *mt}, *records, *apart, *age, *timeout, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "freshbench:", err)
		os.Exit(1)
	}
}

// servers maps a name to its /metrics URL.
type servers map[string]string

func run(logPath, job string, srv servers, records int, apart, age, timeout time.Duration, verbose bool) error {
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	base := map[string]float64{}
	for name, url := range srv {
		if base[name], err = successes(url, job); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	lat := map[string][]time.Duration{}
	for i := range records {
		time.Sleep(apart)
		line := fmt.Sprintf(`{"time":"%s","job":"%s","event":"end","host":"bench","pid":%d,"status":"success","exit_code":0,"duration_seconds":1}`+"\n",
			time.Now().Add(-age).UTC().Format(time.RFC3339Nano), job, 100000+i)
		t0 := time.Now()
		if _, err := f.WriteString(line); err != nil {
			return err
		}
		got, err := waitAll(srv, job, base, float64(i+1), t0, timeout)
		if err != nil {
			return fmt.Errorf("record %d: %w", i+1, err)
		}
		for name, d := range got {
			lat[name] = append(lat[name], d)
		}
		if verbose {
			fmt.Printf("record %d: jobwatch %.1f ms, mtail %.1f ms\n", i+1, ms(got["jobwatch"]), ms(got["mtail"]))
		}
	}
	for _, name := range []string{"jobwatch", "mtail"} {
		d := lat[name]
		slices.Sort(d)
		fmt.Printf("%-8s median %7.1f ms  p90 %7.1f ms  max %7.1f ms  (%d records)\n", name, ms(d[len(d)/2]), ms(d[len(d)*9/10]), ms(d[len(d)-1]), len(d))
	}
	fmt.Printf("mtail / jobwatch (median): %.1fx\n", ms(lat["mtail"][len(lat["mtail"])/2])/ms(lat["jobwatch"][len(lat["jobwatch"])/2]))
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// waitAll scrapes every server, each in its own goroutine, until it shows
// want more successes than base, and returns how long after t0 each did.
func waitAll(srv servers, job string, base map[string]float64, want float64, t0 time.Time, timeout time.Duration) (map[string]time.Duration, error) {
	type result struct {
		name string
		d    time.Duration
		err  error
	}
	ch := make(chan result, len(srv))
	for name, url := range srv {
		go func() {
			for time.Since(t0) < timeout {
				v, err := successes(url, job)
				if err == nil && v-base[name] >= want {
					ch <- result{name: name, d: time.Since(t0)}
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
			ch <- result{name: name, err: fmt.Errorf("%s did not show it within %v", name, timeout)}
		}()
	}
	got, errs := map[string]time.Duration{}, []error(nil)
	for range srv {
		r := <-ch
		got[r.name] = r.d
		errs = append(errs, r.err)
	}
	return got, errors.Join(errs...)
}

// successes is the value of jobwatch_job_runs_total of job's successes on
// url's /metrics (0 while it has none).
func successes(url, job string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "jobwatch_job_runs_total{") || !strings.Contains(line, `job_name="`+job+`"`) || !strings.Contains(line, `result="success"`) {
			continue
		}
		fields := strings.Fields(line)
		return strconv.ParseFloat(fields[len(fields)-1], 64)
	}
	return 0, sc.Err()
}
