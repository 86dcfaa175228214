#!/usr/bin/env bash
# Catch-up of one run log by jobwatch and by Debian's mtail with an
# equivalent program (scripts/runlog.mtail), whole processes, in one run.
# The run log is N records (start and end pairs of 100 jobs, as `jobwatch
# run` writes them; the same lines as BenchmarkIngest in sources/runlog),
# dated days ago: a catch-up is of history.
# jobwatch: a fresh state directory, the binary started on the file with
# its default flags, timed until /metrics shows every run in
# jobwatch_job_runs_total (the figure users read; polled every 50 ms).
# mtail: `mtail --one_shot` on the same file, which reads it to its end,
# prints its metrics and exits. `wc -l` on the same file is the floor.
# Rounds interleave the three so that load drift touches them alike; the
# load average is printed before and after each round.
# Prints wall and CPU (user+system) seconds of each, and mtail's time over
# jobwatch's per round.
# With BEFORE=path/to/an/older/jobwatch, that binary's catch-up is timed in
# the same rounds, for a before/after comparison.
# Then, with FRESH=K (default 20; 0: none), freshness on live records:
# jobwatch (default flags) and mtail (as a daemon, its default 250 ms poll)
# watch one more run log, and internal/testsupport/cmd/freshbench appends K runs to it,
# a start and then its end, each stamped when it is written, a record
# every 300 ms,
# and times each until both servers' /metrics show it: the start as
# jobwatch_job_running 1, the end in jobwatch_job_runs_total (BEFORE's
# binary too, in a round of its own beside mtail).
# FRESH_ARGS=-v prints each record's times; FRESH_ARGS=-age=5s dates the
# records 5 s before they are written (the old, hour-old-style figure).
# Usage: [BEFORE=old-jobwatch] [FRESH=20] scripts/bench-mtail.sh [records=1000000] [rounds=3]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000} rounds=${2:-3}
command -v mtail >/dev/null || { echo "mtail missing: apt-get install mtail" >&2; exit 1; }
tmp=$(mktemp -d)
pid=""
mpid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "$mpid" ] && kill "$mpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/jobwatch" ./cmd/jobwatch  # as README builds it
go build -o "$tmp/freshbench" ./internal/testsupport/cmd/freshbench
# 2026-11-01T00:00:00Z; start at t+i s, end 40.5 s later.
gawk -v n="$n" -v t0=1793491200 'BEGIN {
  for (i = 0; i < n / 2; i++) {
    job = sprintf("job_%02d", i % 100); pid = 1000 + i; s = t0 + i
    printf "{\"time\":\"%s.000Z\",\"job\":\"%s\",\"event\":\"start\",\"host\":\"web1\",\"pid\":%d,\"run_id\":\"%016x\"}\n", strftime("%Y-%m-%dT%H:%M:%S", s, 1), job, pid, i
    printf "{\"time\":\"%s.500Z\",\"job\":\"%s\",\"event\":\"end\",\"host\":\"web1\",\"pid\":%d,\"run_id\":\"%016x\",\"status\":\"success\",\"exit_code\":0,\"duration_seconds\":40.5}\n", strftime("%Y-%m-%dT%H:%M:%S", s + 40, 1), job, pid, i
  }
}' >"$tmp/runs.log"
{
  echo "jobs:"
  for j in $(seq -w 0 99); do printf '  - name: job_%s\n    every: 1h\n' "$j"; done
  printf 'sources:\n  - name: runs\n    type: runlog\n    path: %s/runs.log\n    format: json\n' "$tmp"
} >"$tmp/jobwatch.yml"
hz=$(getconf CLK_TCK)
echo "catch-up of $n records ($(du -m "$tmp/runs.log" | cut -f1) MB); $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); jobwatch at $(git rev-parse --short HEAD), $(mtail --version | head -1)"
# timed CMD...: runs CMD, prints "wall cpu" in seconds.
timed() {
  /usr/bin/time -f '%e %U %S' -o "$tmp/time" "$@" >"$tmp/out" 2>&1
  awk '{ printf "%.2f %.2f", $1, $2 + $3 }' "$tmp/time"
}
# jobwatch_catchup BINARY: prints "wall cpu" of BINARY's catch-up.
jobwatch_catchup() {
  rm -rf "$tmp/state"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  local t0 t1
  t0=$(date +%s.%N)
  "$1" --config.file="$tmp/jobwatch.yml" --state.path="$tmp/state" --web.listen-address="127.0.0.1:$port" >"$tmp/jw.log" 2>&1 &
  pid=$!
  # runs: the runs jobwatch_job_runs_total shows, all jobs and results,
  # 0 before the first scrape answers.
  runs() {
    curl -fs "http://127.0.0.1:$port/metrics" 2>/dev/null |
      awk '$1 ~ /^jobwatch_job_runs_total\{/ { v += $2 } END { printf "%d\n", v }'
  }
  until [ "$(runs)" -ge "$((n / 2))" ] 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { echo "jobwatch exited:" >&2; cat "$tmp/jw.log" >&2; exit 1; }
    sleep 0.05
  done
  t1=$(date +%s.%N)
  local cpu
  cpu=$(awk -v hz="$hz" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$pid/stat")
  kill "$pid"; wait "$pid" || true; pid=""
  awk -v a="$t0" -v b="$t1" -v c="$cpu" 'BEGIN { printf "%.2f %s", b - a, c }'
}
for r in $(seq "$rounds"); do
  l0=$(cut -d' ' -f1-3 /proc/loadavg)
  read -r wcw wcc <<<"$(timed wc -l "$tmp/runs.log")"
  read -r jww jwc <<<"$(jobwatch_catchup "$tmp/jobwatch")"
  bfw=0 bfc=0
  [ -n "${BEFORE:-}" ] && read -r bfw bfc <<<"$(jobwatch_catchup "$BEFORE")"
  read -r mtw mtc <<<"$(timed mtail --one_shot --one_shot_format prometheus --progs scripts/runlog.mtail --logs "$tmp/runs.log")"
  grep -q "jobwatch_job_runs_total{job_name=\"job_00\",prog=\"runlog.mtail\",result=\"success\"} $((n / 200))\$" "$tmp/out" ||
    { echo "mtail did not count $((n / 200)) runs of job_00:" >&2; grep job_00 "$tmp/out" | head -5 >&2; exit 1; }
  l1=$(cut -d' ' -f1-3 /proc/loadavg)
  awk -v r="$r" -v l0="$l0" -v l1="$l1" -v n="$n" -v wcw="$wcw" -v wcc="$wcc" -v jww="$jww" -v jwc="$jwc" -v mtw="$mtw" -v mtc="$mtc" -v bfw="$bfw" -v bfc="$bfc" 'BEGIN {
    printf "round %d (load %s -> %s):\n", r, l0, l1
    printf "  wc -l     %6.2f s wall %6.2f s CPU  %5.2f M records/s wall\n", wcw, wcc, n / (wcw > 0 ? wcw : 0.01) / 1e6
    printf "  jobwatch  %6.2f s wall %6.2f s CPU  %5.2f M records/s wall\n", jww, jwc, n / jww / 1e6
    if (bfw > 0) printf "  before    %6.2f s wall %6.2f s CPU  %5.2f M records/s wall\n", bfw, bfc, n / bfw / 1e6
    printf "  mtail     %6.2f s wall %6.2f s CPU  %5.2f M records/s wall\n", mtw, mtc, n / mtw / 1e6
    printf "  mtail / jobwatch: %.1fx wall, %.1fx CPU\n", mtw / jww, mtc / jwc
  }'
done
[ "${FRESH:-20}" -gt 0 ] || exit 0
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# fresh_round BINARY: jobwatch BINARY and mtail on a new run log, and
# freshbench's K records appended to it.
fresh_round() {
  # The catch-up rounds left about 150 MB for the kernel to write back;
  # an fdatasync queued behind that takes hundreds of milliseconds, which
  # is the disk's, not what a lone record costs (mtail never syncs).
  sync
  mkdir -p "$tmp/fresh" && rm -rf "$tmp/fresh/state" && : >"$tmp/fresh/runs.log"
  sed "s|$tmp/runs.log|$tmp/fresh/runs.log|" "$tmp/jobwatch.yml" >"$tmp/fresh/jobwatch.yml"
  local jp mp
  jp=$(freeport) mp=$(freeport)
  "$1" --config.file="$tmp/fresh/jobwatch.yml" --state.path="$tmp/fresh/state" --web.listen-address="127.0.0.1:$jp" >"$tmp/jw.log" 2>&1 &
  pid=$!
  mtail --progs scripts/runlog.mtail --logs "$tmp/fresh/runs.log" --address 127.0.0.1 --port "$mp" >"$tmp/mtail.log" 2>&1 &
  mpid=$!
  until curl -fs "http://127.0.0.1:$jp/metrics" >/dev/null && curl -fs "http://127.0.0.1:$mp/metrics" >/dev/null; do
    kill -0 "$pid" && kill -0 "$mpid" || { echo "jobwatch or mtail exited:" >&2; cat "$tmp/jw.log" "$tmp/mtail.log" >&2; exit 1; }
    sleep 0.05
  done
  echo "freshness of $1 (load $(cut -d' ' -f1-3 /proc/loadavg)):"
  "$tmp/freshbench" -log "$tmp/fresh/runs.log" -jobwatch "http://127.0.0.1:$jp/metrics" -mtail "http://127.0.0.1:$mp/metrics" -records "${FRESH:-20}" ${FRESH_ARGS:-}
  kill "$pid" "$mpid"; wait "$pid" "$mpid" || true; pid="" mpid=""
}
fresh_round "$tmp/jobwatch"
[ -n "${BEFORE:-}" ] && fresh_round "$BEFORE"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
