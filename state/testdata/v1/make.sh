#!/bin/sh
# Makes the format-1 fixture: a state directory written by jobwatch before
# state/ had a format of its own (commit 7394619), and the metrics that
# jobwatch showed for it. Run from the repository root with that commit's
# binary:
#   git worktree add /tmp/v1 7394619 && (cd /tmp/v1 && go build -o /tmp/jobwatch-v1 ./cmd/jobwatch)
#   state/testdata/v1/make.sh /tmp/jobwatch-v1
# The paths are fixed because the state names the files its sources read.
set -eu
bin=$1
out=$(cd "$(dirname "$0")" && pwd)
dir=/tmp/jobwatch-v1-fixture
port=${PORT:-38474}
rm -rf "$dir" && mkdir -p "$dir"
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
recent=$(date -u -d '-1 minute' +%Y-%m-%dT%H:%M:%SZ)
host=$(hostname)

cat >"$dir/jobwatch.yml" <<YML
stale_multiple: 2
jobs:
  - name: hourly
    every: 1h
    timeout: 25m
  - name: nightly
    schedule: "30 2 * * *"
    timezone: UTC
    scope: cluster
  - name: calendar
    on_calendar: "*-*-* 06:00:00"
    timezone: Europe/Berlin
  - name: never
    every: 24h
  - name: vanish
    every: 1h
sources:
  - name: a
    type: runlog
    path: a.log
    format: json
  - name: b
    type: runlog
    path: b.log
    format: logfmt
  - name: old
    type: runlog
    path: old.log
    format: json
YML

cat >"$dir/a.log" <<LOG
{"time":"2026-11-30T10:00:00Z","job":"hourly","event":"start","host":"web1","pid":100,"run_id":"r1"}
{"time":"2026-11-30T10:00:30Z","job":"hourly","event":"end","host":"web1","pid":100,"run_id":"r1","status":"success","exit_code":0}
{"time":"2026-11-30T11:00:00Z","job":"hourly","event":"start","host":"web1","pid":101}
{"time":"2026-11-30T11:02:00Z","job":"hourly","event":"end","host":"web1","pid":101,"status":"failure","exit_code":3,"duration_seconds":120}
{"time":"2026-11-30T12:00:00Z","job":"hourly","event":"skip","host":"web1","pid":102,"reason":"locked","holder_pid":101}
{"time":"2026-11-30T13:00:00Z","job":"hourly","event":"end","host":"web1","pid":103,"status":"timeout","exit_code":124,"duration_seconds":1500}
{"time":"2026-11-29T02:30:01Z","job":"nightly","event":"start","host":"web1","pid":200}
{"time":"2026-11-29T02:31:00Z","job":"nightly","event":"start","host":"web2","pid":201}
{"time":"2026-11-29T02:40:00Z","job":"nightly","event":"end","host":"web1","pid":200,"status":"success","exit_code":0}
{"time":"2026-11-29T02:41:00Z","job":"nightly","event":"end","host":"web2","pid":201,"status":"success","exit_code":0}
{"time":"2026-11-30T02:30:02Z","job":"nightly","event":"start","host":"web1","pid":210}
{"time":"2026-11-30T02:35:00Z","job":"nightly","event":"end","host":"web1","pid":210,"status":"success","exit_code":0}
{"time":"2026-11-30T02:40:00Z","job":"nightly","event":"start","host":"web1","pid":211}
{"time":"2026-11-30T02:45:00Z","job":"nightly","event":"end","host":"web1","pid":211,"status":"failure","exit_code":1}
{"time":"2026-11-30T14:00:00Z","job":"nightly","event":"start","host":"web3","pid":212}
{"time":"2026-11-30T14:01:00Z","job":"nightly","event":"end","host":"web3","pid":212,"status":"success","exit_code":0}
{"time":"2026-11-30T05:00:01Z","job":"calendar","event":"start","host":"db1","pid":300}
{"time":"2026-11-30T05:00:03Z","job":"calendar","event":"start","host":"db1","pid":301}
{"time":"2026-11-30T05:10:00Z","job":"calendar","event":"end","host":"db1","pid":300,"status":"success","exit_code":0,"duration_seconds":599}
{"time":"2026-11-30T10:00:00Z","job":"nobody","event":"start","host":"web1","pid":5}
this line is not a record
LOG

cat >"$dir/b.log" <<LOG
time=2026-11-30T09:00:00Z job=hourly event=start host=web9 pid=900
time=2026-11-30T09:00:05Z job=hourly event=end host=web9 pid=900 status=success exit_code=0 duration_seconds=5
time=$recent job=hourly event=start host=batch1 pid=777 run_id=open-1
time=$recent job=calendar event=start host=db2 pid=778
LOG

cat >"$dir/old.log" <<LOG
{"time":"2026-11-30T08:00:00Z","job":"hourly","event":"start","host":"web7","pid":700}
{"time":"2026-11-30T08:00:10Z","job":"hourly","event":"end","host":"web7","pid":700,"status":"success","exit_code":0}
LOG

scrape() { curl -sf "http://127.0.0.1:$port/metrics"; }
wait_for() { # pattern
	for _ in $(seq 100); do
		if scrape 2>/dev/null | grep -q "$1"; then return 0; fi
		sleep 0.2
	done
	echo "timed out waiting for $1" >&2; exit 1
}

"$bin" --config.file="$dir/jobwatch.yml" --web.listen-address="127.0.0.1:$port" &
pid=$!
wait_for 'jobwatch_source_records_total{source="old"} 2'
wait_for 'jobwatch_source_records_total{source="b"} 4'
wait_for 'jobwatch_source_records_total{source="a"} 20'
kill -TERM $pid; wait $pid || true

# Second life: the source "old" is removed (its position is kept as retired),
# more records arrive, one run's process is gone (closed as lost).
sed -i '/name: old/,$d' "$dir/jobwatch.yml"
cat >>"$dir/a.log" <<LOG
{"time":"$recent","job":"vanish","event":"start","host":"$host","pid":999999}
{"time":"$recent","job":"hourly","event":"start","host":"web1","pid":104}
LOG
"$bin" --config.file="$dir/jobwatch.yml" --web.listen-address="127.0.0.1:$port" &
pid=$!
wait_for 'jobwatch_source_records_total{source="a"} 22'
wait_for 'jobwatch_job_runs_total{job_name="vanish",result="lost"} 1'
scrape >/dev/null
sleep 2 # a save tick, then the scrape that shows what it saved
scrape >"$dir/metrics.txt"
kill -KILL $pid; wait $pid || true

rm -rf "$out/data"
cp -a "$dir/data" "$out/data"
rm -f "$out/data/lock"
grep '^jobwatch_\(job\|source\)_' "$dir/metrics.txt" >"$out/metrics.txt"
cp "$dir/jobwatch.yml" "$out/jobwatch.yml"
echo "fixture written to $out (made at $now)"
