#!/bin/sh
# Prints jobwatch(1) from kingpin's --help-man, with the whatis line and the
# title's date and version man-db and lintian expect.
# Usage: packaging/manpage.sh PKG_VERSION SOURCE_DATE_EPOCH
set -eu
version=$1 epoch=$2
cd "$(dirname "$0")/.."
date=$(LC_ALL=C date -u -d "@$epoch" +%Y-%m-%d)
go run ./cmd/jobwatch --help-man | sed -e "1s/^\.TH .*/.TH jobwatch 1 \"$date\" \"jobwatch $version\" \"User Commands\"/" \
  -e '/^\.SH "NAME"$/{n;s/^jobwatch$/jobwatch \\- Prometheus exporter and staleness watchdog for scheduled jobs/;}'
