#!/usr/bin/env bash
# Runs jobwatch's whole test suite: the Debian packages the tests start
# (installed when missing), formatting, vet, staticcheck, and every Go test
# with -race.
# Usage: scripts/test.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "$0")/.."

# command -> Debian package that provides it
declare -A need=(
  [rsyslogd]=rsyslog
  [promtool]=prometheus
  [prometheus]=prometheus
  [prometheus-alertmanager]=prometheus-alertmanager
  [mariadbd]=mariadb-server
  [mariadb-install-db]=mariadb-server
  [journalctl]=systemd
  [systemd-analyze]=systemd
  [cron]=cron
  [crontab]=cron
  [faketime]=faketime
  [/lib/systemd/systemd-journal-remote]=systemd-journal-remote
  [redis-server]=redis-server
  [chromium]=chromium
  [lintian]=lintian
  [rpm]=rpm
  [curl]=curl
  [logrotate]=logrotate
  [unshare]=util-linux
  [setpriv]=util-linux
  [nsenter]=util-linux
  [debootstrap]=debootstrap
  [systemd-nspawn]=systemd-container
  [ip]=iproute2
)
missing=()
for cmd in "${!need[@]}"; do
  if ! command -v "$cmd" >/dev/null 2>&1 && [ ! -x "$cmd" ] && [ ! -x "/usr/sbin/$cmd" ]; then
    missing+=("${need[$cmd]}")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
  echo "installing Debian packages the tests need: $pkgs"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $pkgs
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...
# staticcheck's default checks, pinned in tools/go.mod (kept out of the
# product's module); exclusions, if any, are in staticcheck.conf files.
go tool -modfile=tools/go.mod staticcheck ./...
# Four packages at a time on two cores: the longest (schedule's real cron
# under faketime, cmd/jobwatch's binaries on their one-second timers) wait
# more than they compute.
go test -race -count=1 -p 4 -timeout 30m "$@" ./...
