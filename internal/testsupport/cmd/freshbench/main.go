// Command freshbench measures how soon a record appended alone to a run
// log shows on /metrics, in jobwatch and in mtail watching the same file
// at the same time. It is a benchmark tool (scripts/bench-mtail.sh runs
// it), not part of jobwatch.
//
// It appends -records runs of one job, a record every -apart: a start,
// then its end, each stamped when it is written (as applications write them: -age dates
// them that long before, to measure records older than the run log's late
// window). After each record it scrapes both servers every 2 ms, each on
// its own, until they show it: a start as jobwatch_job_running 1, an end
// as one more success in jobwatch_job_runs_total. It prints the median,
// 90th percentile and maximum of each, and mtail's median over jobwatch's.
//
// With -checkin (jobwatch's check-in URL, .../ping/) it sends the runs as
// check-ins instead (/ping/JOB/start, then /ping/JOB), stamped when the
// receiver takes them, and times each from its request until jobwatch's
// /metrics shows it; the time until the 200 (the check-in stored and
// fsynced) is the baseline, "ack". mtail, which takes no check-ins, is not
// measured then.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
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
	apart := flag.Duration("apart", 300*time.Millisecond, "time between two records (a start and its end too)")
	age := flag.Duration("age", 0, "how long before it is written a record is dated (0: stamped when written)")
	timeout := flag.Duration("timeout", 10*time.Second, "how long a record may take to show")
	verbose := flag.Bool("v", false, "print how long each record took to show")
	checkin := flag.String("checkin", "", "jobwatch's check-in URL (http://HOST:PORT/ping/): send check-ins instead of appending to -log")
	flag.Parse()
	var rec recorder
	srv := servers{"jobwatch": *jw}
	switch {
	case *jw == "":
		fmt.Fprintln(os.Stderr, "freshbench: -jobwatch is required")
		os.Exit(2)
	case *checkin != "":
		rec = &checkinRecorder{url: strings.TrimSuffix(*checkin, "/") + "/", job: *job}
	case *logPath == "" || *mt == "":
		fmt.Fprintln(os.Stderr, "freshbench: -log and -mtail are required without -checkin")
		os.Exit(2)
	default:
		f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "freshbench:", err)
			os.Exit(1)
		}
		defer f.Close()
		rec = &logRecorder{f: f, job: *job, age: *age}
		srv["mtail"] = *mt
	}
	if err := run(rec, *job, srv, *records, *apart, *timeout, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "freshbench:", err)
		os.Exit(1)
	}
}

// servers maps a name to its /metrics URL.
type servers map[string]string

// A recorder records run i's start or end (event "start" or "end") the
// way an application does, and returns how long that took to be
// acknowledged (0 when nothing acknowledges it).
type recorder interface {
	record(i int, event string) (time.Duration, error)
}

// logRecorder appends a record to a run log, stamped now less age.
type logRecorder struct {
	f   *os.File
	job string
	age time.Duration
}

func (l *logRecorder) record(i int, event string) (time.Duration, error) {
	fields := ""
	if event == "end" {
		fields = `,"status":"success","exit_code":0,"duration_seconds":0.15`
	}
	line := fmt.Sprintf(`{"time":"%s","job":"%s","event":"%s","host":"bench","pid":%d%s}`+"\n",
		time.Now().Add(-l.age).UTC().Format(time.RFC3339Nano), l.job, event, 100000+i, fields)
	_, err := l.f.WriteString(line)
	return 0, err
}

// checkinRecorder sends a check-in: /ping/JOB/start or /ping/JOB.
type checkinRecorder struct {
	url, job string
}

func (c *checkinRecorder) record(i int, event string) (time.Duration, error) {
	url := c.url + c.job
	if event == "start" {
		url += "/start"
	}
	t0 := time.Now()
	resp, err := http.Get(fmt.Sprintf("%s?host=bench&pid=%d", url, 100000+i))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return time.Since(t0), nil
}

func run(rec recorder, job string, srv servers, records int, apart, timeout time.Duration, verbose bool) error {
	base := map[string]float64{}
	for name, url := range srv {
		var err error
		if base[name], err = sample(url, "jobwatch_job_runs_total", job, `result="success"`); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	lat := map[string][]time.Duration{}
	// write records run i's event and returns how long each server took to
	// show it, metric of job (with label) at least want (more than base
	// when counted), and the acknowledgement, under "ack" when there is one.
	write := func(i int, event, metric, label string, want float64, counted bool) (map[string]time.Duration, error) {
		t0 := time.Now()
		ack, err := rec.record(i, event)
		if err != nil {
			return nil, err
		}
		b := map[string]float64{}
		if counted {
			b = base
		}
		got, err := waitAll(srv, metric, job, label, b, want, t0, timeout)
		if ack > 0 {
			got["ack"] = ack
		}
		return got, err
	}
	for i := range records {
		time.Sleep(apart)
		started, err := write(i, "start", "jobwatch_job_running", "", 1, false)
		if err != nil {
			return fmt.Errorf("run %d's start: %w", i+1, err)
		}
		time.Sleep(apart)
		ended, err := write(i, "end", "jobwatch_job_runs_total", `result="success"`, float64(i+1), true)
		if err != nil {
			return fmt.Errorf("run %d's end: %w", i+1, err)
		}
		for name, d := range started {
			lat[name+" start"] = append(lat[name+" start"], d)
		}
		for name, d := range ended {
			lat[name+" end"] = append(lat[name+" end"], d)
		}
		if verbose {
			fmt.Printf("run %d: start %s; end %s\n", i+1, each(started), each(ended))
		}
	}
	// The baseline: mtail on the same log, or the check-in's own answer.
	other := "mtail"
	if _, ok := srv[other]; !ok {
		other = "ack"
	}
	for _, kind := range []string{"end", "start"} {
		for _, name := range []string{"jobwatch", other} {
			d := lat[name+" "+kind]
			slices.Sort(d)
			fmt.Printf("%-5s %-8s median %7.1f ms  p90 %7.1f ms  max %7.1f ms  (%d records)\n", kind, name, ms(d[len(d)/2]), ms(d[len(d)*9/10]), ms(d[len(d)-1]), len(d))
		}
		m := func(name string) float64 { return ms(lat[name+" "+kind][len(lat[name+" "+kind])/2]) }
		fmt.Printf("%-5s %s / jobwatch (median): %.2fx\n", kind, other, m(other)/m("jobwatch"))
	}
	return nil
}

// each is every server's time, in milliseconds, by name.
func each(got map[string]time.Duration) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(got)) {
		parts = append(parts, fmt.Sprintf("%s %.1f ms", name, ms(got[name])))
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// waitAll scrapes every server, each in its own goroutine, until its
// metric of job (with label) is at least want more than base (0 for a
// server base does not name), and returns how long after t0 each did.
func waitAll(srv servers, metric, job, label string, base map[string]float64, want float64, t0 time.Time, timeout time.Duration) (map[string]time.Duration, error) {
	type result struct {
		name string
		d    time.Duration
		err  error
	}
	ch := make(chan result, len(srv))
	for name, url := range srv {
		go func() {
			for time.Since(t0) < timeout {
				v, err := sample(url, metric, job, label)
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

// sample is the value of metric of job (and label, when not empty) on
// url's /metrics (0 while it has none).
func sample(url, metric, job, label string) (float64, error) {
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
		if !strings.HasPrefix(line, metric+"{") || !strings.Contains(line, `job_name="`+job+`"`) || !strings.Contains(line, label) {
			continue
		}
		fields := strings.Fields(line)
		return strconv.ParseFloat(fields[len(fields)-1], 64)
	}
	return 0, sc.Err()
}
