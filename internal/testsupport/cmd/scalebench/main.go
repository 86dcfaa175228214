// Command scalebench measures scrapes of a whole jobwatch process watching
// many jobs against a floor: a minimal Go server (this same binary, run
// with -floor) writing the very bytes jobwatch wrote, from memory. It is a
// benchmark tool (scripts/bench-scrape.sh runs it), not part of jobwatch.
//
// For each number of jobs it writes a run log in which every job has a
// success, a failure, a skip and a run in progress (the series of a job
// in use), starts jobwatch on it, waits for the catch-up to be saved, and
// then scrapes jobwatch and the floor in turns, in text, OpenMetrics and
// protobuf (against the floor's text):
// first with nothing changing, then with records arriving at -rate a
// second. It prints one Markdown table row per case, with jobwatch's CPU
// time per scrape and its resident memory, then times scrapes of each
// format with gzip, as Prometheus asks for them by default.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobwatch/jobwatch/internal/testsupport/scale"
)

const (
	acceptText = "text/plain;version=0.0.4"
	acceptOM   = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
	// acceptProto is what a Prometheus with native histograms asks for.
	acceptProto = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.8,text/plain;version=0.0.4;q=0.4"
)

// formats are the formats scraped, each against the floor's text (the
// floor serves OpenMetrics to an OpenMetrics request, text to any other).
var formats = []struct{ name, accept string }{{"text", acceptText}, {"OpenMetrics", acceptOM}, {"protobuf", acceptProto}}

func main() {
	floor := flag.String("floor", "", "serve: the text body file (OpenMetrics in FILE.om) on -addr")
	addr := flag.String("addr", "127.0.0.1:0", "listen address of -floor")
	binary := flag.String("jobwatch", "", "the jobwatch binary to measure")
	jobs := flag.String("jobs", "10000,50000,100000", "numbers of jobs")
	scrapes := flag.Int("scrapes", 5, "scrapes of each server per case")
	rate := flag.Int("rate", 200, "records a second in the arriving case")
	setup := flag.String("setup", "", "only write the config and run log of the first of -jobs into this directory")
	heapDir := flag.String("heapprofile", "", "save jobwatch's heap profiles (after a GC) after catch-up and after the scrapes into this directory")
	only := flag.String("peakformat", "", "first measure the peak RSS through catch-up and scrapes of only this format (text, OpenMetrics or protobuf), as one Prometheus scrapes, with records arriving at -rate")
	flag.Parse()
	if *setup != "" {
		n, err := strconv.Atoi(strings.Split(*jobs, ",")[0])
		if err == nil {
			err = scale.WriteSetup(*setup, filepath.Join(*setup, "runs.log"), n, time.Now())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *floor != "" {
		if err := serveFloor(*floor, *addr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *binary == "" {
		fmt.Fprintln(os.Stderr, "scalebench: -jobwatch is required")
		os.Exit(2)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("load average at start: %s\n", strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Println("| jobs | records | format | jobwatch scrape (median, min–max) | floor | ratio | jobwatch CPU-s per scrape | body | RSS after catch-up | RSS max while scraping |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range strings.Split(*jobs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := runCase(*binary, n, *scrapes, *rate, *heapDir, *only); err != nil {
			fmt.Fprintf(os.Stderr, "%d jobs: %v\n", n, err)
			os.Exit(1)
		}
	}
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Printf("load average at end: %s\n", strings.Join(strings.Fields(string(load))[:3], " "))
}

// serveFloor serves the bytes of file (text) and file.om (OpenMetrics)
// from memory.
func serveFloor(file, addr string) error {
	text, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	om, err := os.ReadFile(file + ".om")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept"), "openmetrics") {
			w.Header().Set("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
			w.Write(om)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(text)
	}))
}

type proc struct {
	cmd  *exec.Cmd
	addr string
}

func (p *proc) stop() {
	if p != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func runCase(binary string, n, scrapes, rate int, heapDir, only string) error {
	dir, err := os.MkdirTemp("", "scalebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	logPath := filepath.Join(dir, "runs.log")
	if err := scale.WriteSetup(dir, logPath, n, time.Now()); err != nil {
		return err
	}
	jw, err := startJobwatch(binary, dir, heapDir != "")
	if err != nil {
		return err
	}
	defer jw.stop()
	start := time.Now()
	records := uint64(scale.RecordsPerJob * n)
	if err := scale.WaitRecords(jw.addr, records, 5*time.Minute); err != nil {
		return err
	}
	catchUp := time.Since(start)
	rssCatchUp := rss(jw.cmd.Process.Pid)
	if err := heapProfile(jw.addr, heapDir, fmt.Sprintf("heap-%d-catchup.pb.gz", n)); err != nil {
		return err
	}
	if only != "" {
		if err := peakOfOne(jw, logPath, n, rate, only); err != nil {
			return err
		}
		if err := heapProfile(jw.addr, heapDir, fmt.Sprintf("heap-%d-%s.pb.gz", n, only)); err != nil {
			return err
		}
	}
	first, firstCPU, bodies, err := firstScrapes(jw)
	if err != nil {
		return err
	}
	fl, err := startFloor(dir, bodies)
	if err != nil {
		return err
	}
	defer fl.stop()
	fmt.Fprintf(os.Stderr, "%d jobs: catch-up of %d records saved in %.1f s; first scrapes (render of every job) %.2f s text, %.2f s OpenMetrics, %.2f s protobuf (jobwatch CPU %.2f s, %.2f s, %.2f s)\n",
		n, records, catchUp.Seconds(), first[0].Seconds(), first[1].Seconds(), first[2].Seconds(), firstCPU[0].Seconds(), firstCPU[1].Seconds(), firstCPU[2].Seconds())
	fmt.Fprintf(os.Stderr, "%d jobs: %d series per job (%s), text body %d bytes\n", n, seriesOf(bodies[0], scale.JobName(0)), scale.JobName(0), len(bodies[0]))

	b := &bench{jw: jw, fl: fl, n: n, scrapes: scrapes, rate: rate, rssCatchUp: rssCatchUp}
	for _, arriving := range []bool{false, true} {
		if err := b.rows(logPath, arriving); err != nil {
			return err
		}
	}
	if err := b.gzipScrapes(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d jobs: peak RSS (VmHWM) %d MB\n", n, hwm(jw.cmd.Process.Pid)>>10)
	return heapProfile(jw.addr, heapDir, fmt.Sprintf("heap-%d-scraped.pb.gz", n))
}

// peakOfOne scrapes jobwatch in one format only, as a Prometheus server
// does, once a second for 20 s with records arriving at rate, and prints
// the peak RSS (VmHWM) since its start: catch-up and scrapes. The other
// formats' scrapes that follow keep caches of their own (dropped after 10
// minutes unscraped), which one Prometheus would not make.
func peakOfOne(jw *proc, logPath string, n, rate int, format string) error {
	i := slices.IndexFunc(formats, func(f struct{ name, accept string }) bool { return f.name == format })
	if i < 0 {
		return fmt.Errorf("-peakformat %q: not one of text, OpenMetrics, protobuf", format)
	}
	ctx, cancel := context.WithCancel(context.Background())
	written := make(chan int, 1)
	go func() { written <- stream(ctx, logPath, n, rate) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for range 20 {
		if _, _, err := timed(jw.addr, formats[i].accept); err != nil {
			cancel()
			return err
		}
		<-tick.C
	}
	cancel()
	fmt.Fprintf(os.Stderr, "%d jobs: peak RSS (VmHWM) through catch-up and 20 scrapes of %s alone, %d records arriving: %d MB\n",
		n, format, <-written, hwm(jw.cmd.Process.Pid)>>10)
	return nil
}

// startJobwatch starts jobwatch on the config and run log in dir.
func startJobwatch(binary, dir string, pprof bool) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"--config.file=" + filepath.Join(dir, "jobwatch.yml"),
		"--state.path=" + filepath.Join(dir, "state"), "--web.listen-address=" + addr, "--log.level=warn"}
	if pprof {
		args = append(args, "--web.enable-pprof")
	}
	jw := &proc{addr: addr, cmd: exec.Command(binary, args...)}
	jw.cmd.Stderr = os.Stderr
	if err := jw.cmd.Start(); err != nil {
		return nil, err
	}
	return jw, nil
}

// firstScrapes times jobwatch's first scrape of each format, which renders
// every job, and returns the bodies of a second one for the floor. The
// first bodies are discarded: reading half a gigabyte into memory would
// time this program, not jobwatch.
func firstScrapes(jw *proc) (first, cpu [3]time.Duration, bodies [2][]byte, err error) {
	for i, accept := range []string{acceptText, acceptOM, acceptProto} {
		c0 := cpuTime(jw.cmd.Process.Pid)
		d, _, err := timed(jw.addr, accept)
		if err != nil {
			return first, cpu, bodies, err
		}
		first[i], cpu[i] = d, cpuTime(jw.cmd.Process.Pid)-c0
	}
	for i, accept := range []string{acceptText, acceptOM} {
		if bodies[i], err = scale.Scrape(jw.addr, accept); err != nil {
			return first, cpu, bodies, err
		}
	}
	return first, cpu, bodies, nil
}

// seriesOf counts the sample lines of job in a text body.
func seriesOf(body []byte, job string) int {
	n := 0
	for line := range bytes.Lines(body) {
		if line[0] != '#' && bytes.Contains(line, []byte(`job_name="`+job+`"`)) {
			n++
		}
	}
	return n
}

// startFloor starts the floor server (this program, with -floor) on the
// bodies, text and OpenMetrics, written into dir.
func startFloor(dir string, bodies [2][]byte) (*proc, error) {
	floorFile := filepath.Join(dir, "floor.txt")
	if err := os.WriteFile(floorFile, bodies[0], 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(floorFile+".om", bodies[1], 0o600); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	fl := &proc{cmd: exec.Command(self, "-floor", floorFile)}
	out, err := fl.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := fl.cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		fl.stop()
		return nil, fmt.Errorf("floor server: %w", err)
	}
	fl.addr = strings.TrimSpace(line)
	return fl, nil
}

// bench is one case: jobwatch and the floor serving the same n jobs.
type bench struct {
	jw, fl           *proc
	n, scrapes, rate int
	rssCatchUp       int // KB
}

// rows prints the case's table rows, one a format, with records arriving
// at the rate or none.
func (b *bench) rows(logPath string, arriving bool) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	written := 0
	if arriving {
		wg.Add(1)
		go func() { defer wg.Done(); written = stream(ctx, logPath, b.n, b.rate) }()
		time.Sleep(2 * time.Second) // saves under way before the first scrape
	}
	for _, f := range formats {
		m, err := b.measure(f.accept)
		if err != nil {
			return err
		}
		state := "none"
		if arriving {
			state = fmt.Sprintf("%d/s", b.rate)
		}
		format := f.name
		fmt.Printf("| %d | %s | %s | %.3f s (%.3f–%.3f) | %.3f s | %.1f× | %.2f | %.0f MB | %d MB | %d MB |\n",
			b.n, state, format, median(m.jw).Seconds(), slices.Min(m.jw).Seconds(), slices.Max(m.jw).Seconds(),
			median(m.fl).Seconds(), median(m.jw).Seconds()/median(m.fl).Seconds(),
			m.cpu.Seconds()/float64(b.scrapes), float64(m.size)/1e6, b.rssCatchUp>>10, m.maxRSS>>10)
	}
	cancel()
	wg.Wait()
	if arriving {
		fmt.Fprintf(os.Stderr, "%d jobs: %d records written while scraping\n", b.n, written)
	}
	return nil
}

// scrapeTimes are the figures of scrapes of one format, jobwatch's and the
// floor's in turns.
type scrapeTimes struct {
	jw, fl []time.Duration
	cpu    time.Duration // jobwatch's
	maxRSS int           // jobwatch's, KB
	size   int
}

func (b *bench) measure(accept string) (scrapeTimes, error) {
	var m scrapeTimes
	pid := b.jw.cmd.Process.Pid
	for range b.scrapes {
		c0 := cpuTime(pid)
		d, sz, err := timed(b.jw.addr, accept)
		if err != nil {
			return m, err
		}
		m.cpu += cpuTime(pid) - c0
		m.jw, m.size = append(m.jw, d), sz
		m.maxRSS = max(m.maxRSS, rss(pid))
		d, _, err = timed(b.fl.addr, accept)
		if err != nil {
			return m, err
		}
		m.fl = append(m.fl, d)
	}
	return m, nil
}

// gzipScrapes times jobwatch's scrapes with gzip. Prometheus asks for gzip
// by default (scrape_configs' enable_compression); the floor writes no
// compressed bytes to compare.
func (b *bench) gzipScrapes() error {
	for _, f := range formats {
		accept := f.accept
		var ds []time.Duration
		size := 0
		for range b.scrapes {
			d, sz, err := timedAs(b.jw.addr, accept, "gzip")
			if err != nil {
				return err
			}
			ds, size = append(ds, d), sz
		}
		fmt.Fprintf(os.Stderr, "%d jobs: gzip scrapes, %s: %.3f s (%.3f–%.3f), %.1f MB\n", b.n, f.name,
			median(ds).Seconds(), slices.Min(ds).Seconds(), slices.Max(ds).Seconds(), float64(size)/1e6)
	}
	return nil
}

// heapProfile saves jobwatch's heap profile, taken after a GC, as
// dir/name; nothing when dir is empty. It is taken after the RSS figures,
// since the forced GC changes them.
func heapProfile(addr, dir, name string) error {
	if dir == "" {
		return nil
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, name), b, 0o600)
}

// stream appends rate records a second (start and end pairs, job after
// job) in ten writes a second until ctx ends; it returns how many.
func stream(ctx context.Context, logPath string, n, rate int) int {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	written, next, pid := 0, 0, 1<<24
	var b bytes.Buffer
	for {
		select {
		case <-ctx.Done():
			return written
		case <-tick.C:
		}
		b.Reset()
		t := time.Now()
		for range rate / 20 {
			next, pid = next+1, pid+1
			scale.AppendSuccess(&b, scale.JobName((next-1)%n), "web2", pid, t)
			written += 2
		}
		if _, err := f.Write(b.Bytes()); err != nil {
			return written
		}
	}
}

// timed is one scrape's wall time (request to last byte) and size.
func timed(addr, accept string) (time.Duration, int, error) { return timedAs(addr, accept, "") }

// timedAs is timed, asking for the body in encoding (gzip, as Prometheus
// asks by default), which is read as it comes.
func timedAs(addr, accept, encoding string) (time.Duration, int, error) {
	req, err := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Accept", accept)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	t0 := time.Now()
	rsp, err := scale.Client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer rsp.Body.Close()
	n, err := io.Copy(io.Discard, rsp.Body)
	return time.Since(t0), int(n), err
}

// rss and hwm are VmRSS and VmHWM of pid, in kB; 0 once it has gone.
func rss(pid int) int { kb, _ := scale.StatusKB(pid, "VmRSS"); return kb }
func hwm(pid int) int { kb, _ := scale.StatusKB(pid, "VmHWM"); return kb }

// cpuTime is the user and system time of pid.
func cpuTime(pid int) time.Duration {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.Atoi(fields[11])
	k, _ := strconv.Atoi(fields[12])
	return time.Duration(u+k) * time.Second / 100 // USER_HZ is 100 on Linux
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
