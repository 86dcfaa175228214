#!/usr/bin/env bash
# Freshness of check-ins, live: the built binary (default flags, check-ins
# on, the default spool store) and internal/testsupport/cmd/freshbench sending K runs of
# one job as check-ins (/ping/JOB/start, then /ping/JOB), a check-in every
# 300 ms, each stamped when the receiver takes it; each is timed from its
# request until /metrics shows it (the start as jobwatch_job_running 1, the
# end as one more success in jobwatch_job_runs_total), and, as the
# baseline in the same run, until its 200 (stored and fsynced).
# With BEFORE=path/to/an/older/jobwatch, that binary in a round of its own.
# Usage: [BEFORE=old-jobwatch] scripts/bench-checkin-fresh.sh [K=20]
set -euo pipefail
cd "$(dirname "$0")/.."
k=${1:-20}
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/jobwatch" ./cmd/jobwatch
go build -o "$tmp/freshbench" ./internal/testsupport/cmd/freshbench
printf 'jobs:\n  - name: job_00\n    every: 1h\ncheckins:\n  enabled: true\n' >"$tmp/jobwatch.yml"
echo "$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); jobwatch at $(git rev-parse --short HEAD)"
round() {
  rm -rf "$tmp/state"
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$1" --config.file="$tmp/jobwatch.yml" --state.path="$tmp/state" --web.listen-address="127.0.0.1:$port" >"$tmp/jw.log" 2>&1 &
  pid=$!
  until curl -fs "http://127.0.0.1:$port/metrics" >/dev/null; do
    kill -0 "$pid" 2>/dev/null || { echo "jobwatch exited:" >&2; cat "$tmp/jw.log" >&2; exit 1; }
    sleep 0.05
  done
  echo "check-ins to $1 (load $(cut -d' ' -f1-3 /proc/loadavg)):"
  "$tmp/freshbench" -checkin "http://127.0.0.1:$port/ping/" -jobwatch "http://127.0.0.1:$port/metrics" -records "$k" ${FRESH_ARGS:-}
  kill "$pid"; wait "$pid" || true; pid=""
}
round "$tmp/jobwatch"
[ -n "${BEFORE:-}" ] && round "$BEFORE"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
