#!/usr/bin/env bash
# Run-log ingest of this checkout against an older commit, interleaved so
# that load drift on a shared machine touches both alike: builds both
# BenchmarkIngest test binaries (the benchmark lived in ./sources/ before the
# one-package-per-source layout, in ./sources/runlog/ since), then runs them
# in turns and prints records per CPU-second for JSON and logfmt, and the
# ratio of this checkout to the older one in each round.
# Usage: scripts/bench-ingest.sh [base-commit=beb8cb1] [rounds=3]
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-beb8cb1} rounds=${2:-3}
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/base" "$base"
pkg_of() { dirname "$(grep -rl --include='*_test.go' '^func BenchmarkIngest(' "$1" | head -1)"; }
(cd "$tmp/base" && go test -c -o "$tmp/base.test" "./$(pkg_of . | sed 's|^\./||')")
go test -c -o "$tmp/head.test" "./$(pkg_of . | sed 's|^\./||')"
# rates BIN: "json logfmt" records per CPU-second, one pass over 1,000,000 records each, twice.
rates() {
  "$1" -test.run '^$' -test.bench 'Ingest/(json|logfmt)$' -test.benchtime 2x -test.cpu 1 2>&1 |
    awk '/Ingest\/json / {j=$(NF-3)} /Ingest\/logfmt / {l=$(NF-3)} END {print j, l}'
}
echo "ingest, records per CPU-second; $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); base $base, head $(git rev-parse --short HEAD)"
printf '%-6s %-12s %-12s %-12s %-12s %-8s %-8s %s\n' round base-json head-json base-logfmt head-logfmt json logfmt load
for r in $(seq "$rounds"); do
  l0=$(cut -d' ' -f1 /proc/loadavg)
  # Odd rounds run the base first, even rounds the head: neither always
  # follows the other's garbage and page cache.
  if [ $((r % 2)) -eq 1 ]; then
    read -r bj bl <<<"$(rates "$tmp/base.test")"
    read -r hj hl <<<"$(rates "$tmp/head.test")"
  else
    read -r hj hl <<<"$(rates "$tmp/head.test")"
    read -r bj bl <<<"$(rates "$tmp/base.test")"
  fi
  awk -v r="$r" -v bj="$bj" -v hj="$hj" -v bl="$bl" -v hl="$hl" -v l="$l0 -> $(cut -d' ' -f1 /proc/loadavg)" \
    'BEGIN { printf "%-6s %-12.0f %-12.0f %-12.0f %-12.0f %-8.2f %-8.2f %s\n", r, bj, hj, bl, hl, hj/bj, hl/bl, l }'
done
