#!/usr/bin/env bash
# Measures what jobwatch run costs against flock(1) and timeout(1), and what
# the shared lock adds: `true` under flock(1) (and timeout), under
# jobwatch-run and jobwatch run with a local lock and a timeout, and under
# jobwatch-run with a local lock and a Redis lock (a throwaway redis-server on a free loopback port, no
# persistence). Rounds interleave the commands so that load drift on a
# shared machine touches all of them alike. Prints the mean wall time and
# user+system CPU per run of each command.
# With BEFORE=path/to/an/older/jobwatch, that binary's two jobwatch rows are
# measured in the same rounds, for a before/after comparison.
# Usage: [BEFORE=old-jobwatch] scripts/bench-run-lock.sh [runs-per-round=100] [rounds=5]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100} rounds=${2:-5}
command -v redis-server >/dev/null || { echo "redis-server missing: apt-get install redis-server" >&2; exit 1; }
tmp=$(mktemp -d)
rpid=""
trap '[ -n "$rpid" ] && kill "$rpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/jobwatch" ./cmd/jobwatch  # as README builds it
CGO_ENABLED=0 go build -o "$tmp/jobwatch-run" ./cmd/jobwatch-run
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp" --logfile "$tmp/redis.log" &
rpid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
jw="$tmp/jobwatch"
declare -a names=(
  "flock -n F true"
  "flock -n F timeout 10 true"
  "jobwatch-run --lock F --timeout 10s -- true"
  "jobwatch run --lock F --timeout 10s -- true"
  "jobwatch-run --lock F --lock-redis URL -- true"
)
declare -a cmds=(
  "flock -n $tmp/f.lock true"
  "flock -n $tmp/f.lock timeout 10 true"
  "$jw-run --job b --log $tmp/runs.log --lock $tmp/j.lock --timeout 10s -- true"
  "$jw run --job b --log $tmp/runs.log --lock $tmp/j.lock --timeout 10s -- true"
  "$jw-run --job b --log $tmp/runs.log --lock $tmp/j.lock --lock-redis redis://127.0.0.1:$port/0 --lock-ttl 10s --kill-after 1s -- true"
)
if [ -n "${BEFORE:-}" ]; then
  names+=("before: jobwatch run --lock F --timeout 10s -- true" "before: ... --lock-redis URL -- true")
  cmds+=("$BEFORE run --job b --log $tmp/runs.log --lock $tmp/j.lock --timeout 10s -- true"
    "$BEFORE run --job b --log $tmp/runs.log --lock $tmp/j.lock --lock-redis redis://127.0.0.1:$port/0 --lock-ttl 10s --kill-after 1s -- true")
fi
declare -A wall cpu
TIMEFORMAT='%R %U %S'
for r in $(seq "$rounds"); do
  for i in "${!cmds[@]}"; do
    c=${cmds[$i]}
    t=$( { time (for _ in $(seq "$n"); do $c >/dev/null; done) ; } 2>&1 )
    read -r real user sys <<<"$t"
    wall[$i]="${wall[$i]:-} $real"
    cpu[$i]="${cpu[$i]:-} $(echo "$user + $sys" | bc)"
  done
done
if grep -q '"skip"' "$tmp/runs.log"; then echo "a run was skipped: the figures are not of the lock taken" >&2; exit 1; fi
echo "jobwatch run: $n runs x $rounds rounds, commands in turn; commit $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty); $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg); redis-server $(redis-server --version | grep -o 'v=[^ ]*')"
printf '%-55s %22s %14s\n' command "wall ms/run (min..max)" "cpu ms/run"
for i in "${!cmds[@]}"; do
  echo "${wall[$i]}" "|" "${cpu[$i]}" | awk -v n="$n" -v name="${names[$i]}" '{
    w = 1; min = 1e9; max = 0; s = 0; c = 0; k = 0
    for (j = 1; j <= NF; j++) {
      if ($j == "|") { w = 0; continue }
      if (w) { v = $j * 1000 / n; s += v; k++; if (v < min) min = v; if (v > max) max = v } else { c += $j * 1000 / n }
    }
    printf "%-55s %8.2f (%.2f..%.2f) %14.2f\n", name, s / k, min, max, c / k
  }'
done
# The headline ratio: each round's jobwatch-run against flock + timeout in
# the same round, then their mean, least and greatest.
echo "${wall[2]}" "|" "${wall[1]}" | awk '{
  for (j = 1; j <= NF; j++) if ($j == "|") m = j
  min = 1e9; max = 0; s = 0
  for (j = 1; j < m; j++) { r = $j / $(m + j); s += r; if (r < min) min = r; if (r > max) max = r }
  printf "jobwatch-run / flock -n F timeout 10 true: %.2fx (%.2f..%.2f over the rounds)\n", s / (m - 1), min, max
}'
