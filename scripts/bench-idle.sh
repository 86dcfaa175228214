#!/usr/bin/env bash
# Measures jobwatch's whole-process CPU use while idle: N run-log sources on
# N files (one job record each), nothing written during the measurement.
# Prints utime+stime over the window from /proc/PID/stat, as % of one core,
# and the process's context switches a second (its threads' wake-ups, a
# steadier figure than CPU time on a busy machine).
# Usage: scripts/bench-idle.sh [sources=300] [seconds=10] [runs=3]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-300} secs=${2:-10} runs=${3:-3}
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
go build -o "$tmp/jobwatch" ./cmd/jobwatch
mkdir "$tmp/logs"
{
  echo "jobs:"
  for j in $(seq -w 0 29); do printf '  - name: job%s\n    every: 1h\n' "$j"; done
  echo "sources:"
  for i in $(seq -w 0 $((n - 1))); do
    printf '  - name: src%s\n    type: runlog\n    path: %s/logs/run%s.log\n    format: json\n' "$i" "$tmp" "$i"
    echo '{"time":"2024-01-01T00:00:00Z","job":"job01","event":"skip","host":"h","pid":1}' >"$tmp/logs/run$i.log"
  done
} >"$tmp/jobwatch.yml"
hz=$(getconf CLK_TCK)
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n }'; }
echo "jobwatch idle CPU, $n run-log sources, ${secs}s windows; $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$runs"); do
  "$tmp/jobwatch" --config.file="$tmp/jobwatch.yml" --state.path="$tmp/state" --web.listen-address=127.0.0.1:0 >"$tmp/log" 2>&1 &
  pid=$!
  sleep 3 # startup, first reads, first state save
  a=$(awk '{print $14+$15}' "/proc/$pid/stat") sa=$(switches "$pid")
  sleep "$secs"
  b=$(awk '{print $14+$15}' "/proc/$pid/stat") sb=$(switches "$pid")
  kill "$pid"; wait "$pid" || true; pid=""
  awk -v t=$((b - a)) -v hz="$hz" -v s="$secs" -v r="$r" -v cs=$((sb - sa)) \
    'BEGIN { printf "run %d: %.2f s CPU in %d s = %.2f%% of one core, %.0f context switches/s\n", r, t/hz, s, 100*t/hz/s, cs/s }'
done
