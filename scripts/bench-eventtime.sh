#!/usr/bin/env bash
# The restart of issue 23, whole-process, for this checkout and an older
# commit: a minutely job read from two run logs; jobwatch stops, source A
# gets a backlog of RECORDS records (a run's start and end each minute) and
# B a few records of the same job; jobwatch starts again. Prints, for each
# build: seconds until every record is read, seconds until the verdicts are
# in (the runs all counted, and for this checkout its decisions no more
# than a few seconds behind), peak RSS, and the missed runs counted (one
# slot of the backlog has no run, and the minute or two since its last run
# have none yet: 2 or 3 are right). B has the last three runs whole.
# Usage: scripts/bench-eventtime.sh [base-commit=585b689] [records=500000]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-585b689} records=${2:-500000}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/base" "$base"
(cd "$tmp/base" && CGO_ENABLED=0 go build -o "$tmp/jobwatch-base" ./cmd/jobwatch)
CGO_ENABLED=0 go build -o "$tmp/jobwatch-head" ./cmd/jobwatch
port=$((20000 + RANDOM % 20000))

metric() { curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | awk -v m="$1" '$1 == m {print $2; found=1} END {if (!found) print ""}'; }
wait_metric() { # wait_metric SECONDS NAME TEST VALUE: until NAME's value passes [ value TEST VALUE ]
  local until=$((SECONDS + $1)) v
  while :; do
    v=$(metric "$2")
    if [ -n "$v" ] && awk -v a="$v" -v op="$3" -v b="$4" 'BEGIN {exit !((op == "=" && a == b) || (op == "<" && a < b))}'; then
      return 0
    fi
    [ $SECONDS -lt $until ] || { echo "timed out: $2 is ${v:-absent}, want $3 $4" >&2; return 1; }
    sleep 0.05
  done
}

one() { # one BUILD
  local bin=$1 dir=$tmp/run-$1 runs=$((records / 2))
  rm -rf "$dir"; mkdir -p "$dir"
  cat >"$dir/jobwatch.yml" <<EOF
jobs:
  - name: minutely
    schedule: "* * * * *"
    timezone: UTC
    grace: 20s
sources:
  - {name: a, type: runlog, format: json, path: $dir/a.log}
  - {name: b, type: runlog, format: json, path: $dir/b.log}
EOF
  # Before the stop: one run in each log, read and saved.
  python3 - "$dir" "$runs" <<'EOF'
import datetime, json, sys
d, runs = sys.argv[1], int(sys.argv[2])
now = datetime.datetime.now(datetime.timezone.utc).replace(second=0, microsecond=0)
base = now - datetime.timedelta(minutes=runs + 2)
def rec(t, ev, pid, **kw):
    return json.dumps({"time": t.isoformat().replace("+00:00", "Z"), "job": "minutely", "event": ev, "host": "web1", "pid": pid, **kw}) + "\n"
with open(d + "/a.log", "w") as f:
    f.write(rec(base + datetime.timedelta(seconds=2), "start", 1))
    f.write(rec(base + datetime.timedelta(seconds=9), "end", 1, status="success", exit_code=0))
open(d + "/b.log", "w").close()
# The backlog, written while jobwatch is stopped: a run each minute, one
# slot left out; the last three runs are in B.
with open(d + "/backlog-a", "w") as a, open(d + "/backlog-b", "w") as b:
    for m in range(1, runs + 1):
        if m == runs // 2:
            continue
        t = base + datetime.timedelta(minutes=m)
        f = b if m > runs - 3 else a
        f.write(rec(t + datetime.timedelta(seconds=2), "start", 1000 + m % 30000))
        f.write(rec(t + datetime.timedelta(seconds=9), "end", 1000 + m % 30000, status="success", exit_code=0))
EOF
  local bin_path=$tmp/jobwatch-$bin hold=()
  local help
  help=$("$bin_path" --help 2>&1 || true)
  [[ $help == *sources.startup-hold* ]] && hold=(--sources.startup-hold=10s)
  "$bin_path" --config.file="$dir/jobwatch.yml" --state.path="$dir/state" --web.listen-address=127.0.0.1:$port "${hold[@]}" >"$dir/log1" 2>&1 &
  local pid=$!
  wait_metric 60 'jobwatch_source_records_total{source="a"}' = 2
  sleep 1.5 # pacing: a save after the first read
  kill -TERM $pid; wait $pid || true
  cat "$dir/backlog-a" >>"$dir/a.log"; cat "$dir/backlog-b" >>"$dir/b.log"
  local total_a total_b
  total_a=$(wc -l <"$dir/a.log"); total_b=$(wc -l <"$dir/b.log")
  local t0=$EPOCHREALTIME
  "$bin_path" --config.file="$dir/jobwatch.yml" --state.path="$dir/state" --web.listen-address=127.0.0.1:$port "${hold[@]}" >"$dir/log2" 2>&1 &
  pid=$!
  wait_metric 300 'jobwatch_source_records_total{source="a"}' = "$total_a"
  local t_read=$EPOCHREALTIME
  wait_metric 300 'jobwatch_job_runs_total{job_name="minutely",result="success"}' = "$runs"
  if [ ${#hold[@]} -gt 0 ]; then
    if [ -n "$(metric 'jobwatch_job_decisions_behind_seconds{job_name="minutely"}')" ]; then # a build before the figure went per source
      wait_metric 300 'jobwatch_job_decisions_behind_seconds{job_name="minutely"}' '<' 5
    else # the job's verdicts are as far behind as its furthest behind source
      wait_metric 300 'jobwatch_source_decisions_behind_seconds{source="a"}' '<' 5
      wait_metric 300 'jobwatch_source_decisions_behind_seconds{source="b"}' '<' 5
    fi
  else
    sleep 12 # the older build counts missed runs by the clock after a 10 s warm-up
  fi
  local t_done=$EPOCHREALTIME
  local hwm missed
  hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
  missed=$(metric 'jobwatch_job_missed_runs_total{job_name="minutely"}')
  kill -TERM $pid; wait $pid || true
  awk -v b="$bin" -v r="$((total_a + total_b - 2))" -v tr="$(echo "$t_read - $t0" | bc)" -v td="$(echo "$t_done - $t0" | bc)" -v m="$hwm" -v x="$missed" \
    'BEGIN { printf "%-6s %-9s %-10.2f %-12.2f %-10.1f %s\n", b, r, tr, td, m/1024, x }'
}
echo "restart with a backlog; $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); base $base, head $(git rev-parse --short HEAD); load $(cut -d' ' -f1 /proc/loadavg)"
printf '%-6s %-9s %-10s %-12s %-10s %s\n' build records read-s verdicts-s peak-MB missed
one base
one head
