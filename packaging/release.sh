#!/bin/sh
# Packs the release archives: for each ARCH, DIST/jobwatch-VERSION.linux-ARCH.tar.gz
# holding DIST/build/linux-ARCH/jobwatch and jobwatch-run (built by `make
# release`) beside the LICENSE, README, changelog, example config, rules and
# dashboard; then
# DIST/sha256sums.txt. Byte for byte the same on every run of one commit: file
# times are SOURCE_DATE_EPOCH (the commit's), owners 0:0, modes set here, names
# sorted, and gzip writes no name or time.
# Usage: packaging/release.sh DIST VERSION SOURCE_DATE_EPOCH ARCH...
set -eu
dist=$1 version=$2 epoch=$3
shift 3
cd "$(dirname "$0")/.."
sums=
for arch in "$@"; do
  name=jobwatch-$version.linux-$arch
  stage=$dist/build/$name
  rm -rf "$stage"
  mkdir -p "$stage/alerts" "$stage/dashboards"
  install -m 0755 "$dist/build/linux-$arch/jobwatch" "$stage/jobwatch"
  install -m 0755 "$dist/build/linux-$arch/jobwatch-run" "$stage/jobwatch-run"
  install -m 0644 LICENSE README.md CHANGELOG.md "$stage/"
  # The packaged default configuration: the journal and /var/log/jobwatch.
  install -m 0644 packaging/jobwatch.yml "$stage/jobwatch.yml"
  install -m 0644 alerts/jobwatch.rules.yml "$stage/alerts/"
  install -m 0644 dashboards/jobwatch.json "$stage/dashboards/"
  chmod 0755 "$stage" "$stage/alerts" "$stage/dashboards"
  tar --format=gnu --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
    -C "$dist/build" -cf - "$name" | gzip -n -9 >"$dist/$name.tar.gz.tmp"
  mv "$dist/$name.tar.gz.tmp" "$dist/$name.tar.gz"
  rm -rf "$stage"
  sums="$sums $name.tar.gz"
done
# shellcheck disable=SC2086 # one word a file name
(cd "$dist" && sha256sum $sums >sha256sums.txt)
cat "$dist/sha256sums.txt"
