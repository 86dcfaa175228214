#!/usr/bin/env bash
# Scrapes of a whole jobwatch process at 10,000, 50,000 and 100,000 jobs,
# with nothing changing and with 200 records a second arriving, each against
# a floor: a minimal Go server writing the same bytes from memory
# (internal/testsupport/cmd/scalebench -floor). Prints a Markdown table for BENCHMARKS.md.
# Usage: scripts/bench-scrape.sh [jobs=10000,50000,100000] [scrapes=5] [rate=200] [scalebench flags]
# -peakformat F (text, OpenMetrics or protobuf) first measures the peak RSS
# with only F scraped, as by one Prometheus server.
# e.g. scripts/bench-scrape.sh 50000 5 200 -heapprofile /tmp/prof (heap
# profiles after a GC, once the RSS figures are taken)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-10000,50000,100000} scrapes=${2:-5} rate=${3:-200}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/jobwatch" ./cmd/jobwatch
go build -o "$tmp/scalebench" ./internal/testsupport/cmd/scalebench
echo "$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(go version | cut -d' ' -f3)"
"$tmp/scalebench" -jobwatch "$tmp/jobwatch" -jobs "$jobs" -scrapes "$scrapes" -rate "$rate" "${@:4}"
