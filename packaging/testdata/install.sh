#!/bin/sh
# The package's life on a copy of this machine: install, use, upgrade,
# remove, purge. Run by TestInstall as root inside
#   unshare -m --propagation private --pid --fork --kill-child --mount-proc
# so that every mount below, and so every change dpkg makes, lives in that
# mount namespace only, and every process it starts dies with it.
# Usage: install.sh TMPFS_DIR OLD.deb NEW.deb PORT
set -eu
scratch=$1 old=$2 new=$3 port=$4

# say WHAT: a step, with the time, so that the log shows which step was slow.
say() { printf '=== %s %s\n' "$(date +%s.%N)" "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }
# want WHAT GOT EXPECTED
want() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

# /etc, /usr and /var as overlays whose writable layer is a tmpfs; /run an
# empty tmpfs, so that no maintainer script finds systemd (/run/systemd/system)
# or a D-Bus socket to reach the machine's service manager through.
mount -t tmpfs -o mode=0755 tmpfs "$scratch"
for d in etc usr var; do
	[ ! -L "/$d" ] || fail "/$d is a symlink"
	mkdir -p "$scratch/$d/upper" "$scratch/$d/work"
	mount -t overlay overlay -o "lowerdir=/$d,upperdir=$scratch/$d/upper,workdir=$scratch/$d/work" "/$d"
done
for d in /bin /sbin /lib /lib64; do
	# Debian 12 is merged-/usr: these are links into the /usr overlay.
	[ ! -e "$d" ] || [ -L "$d" ] || fail "$d is not a link into /usr: it would not be overlaid"
done
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p -m 1777 /run/lock
# The throwaway root is the package's alone: what a jobwatch used on this
# machine left (a runs.log of `jobwatch run` without --log, a user, a state)
# is removed from the overlays, never from the machine. An install over such
# leftovers is tested below, on purpose.
rm -rf /var/log/jobwatch /var/lib/jobwatch /etc/jobwatch /etc/default/jobwatch /etc/logrotate.d/jobwatch
if getent passwd jobwatch >/dev/null; then userdel jobwatch; fi
if getent group jobwatch >/dev/null; then groupdel jobwatch; fi
# man-db's trigger rebuilds the whole manual index at each dpkg run (seconds
# each, three times): not the package's doing, and only in this copy of /var.
rm -f /var/lib/man-db/auto-update
export DEBIAN_FRONTEND=noninteractive

jw_pid=
stop_jobwatch() {
	if [ -n "$jw_pid" ]; then
		kill -TERM "$jw_pid" 2>/dev/null || true
		wait "$jw_pid" || true
		jw_pid=
	fi
}
trap stop_jobwatch EXIT

# The unit's user, groups and capabilities (User=, SupplementaryGroups=,
# AmbientCapabilities=, CapabilityBoundingSet=, NoNewPrivileges=).
caps=-all,+dac_read_search
as_unit="--reuid jobwatch --regid jobwatch --init-groups --no-new-privs --inh-caps=$caps --ambient-caps=$caps --bounding-set=$caps"

# start_jobwatch: as the unit starts it, as user jobwatch with its groups,
# ARGS read from /etc/default/jobwatch and ExecStart from the unit.
start_jobwatch() {
	exec_start=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/jobwatch.service)
	[ -n "$exec_start" ] || fail "no ExecStart in the unit"
	(
		set -a
		. /etc/default/jobwatch
		set +a
		cd /
		exec setpriv $as_unit sh -c "exec $exec_start" >"$scratch/jobwatch.log" 2>&1
	) &
	jw_pid=$!
}

# metrics PATTERN [TENTHS]: waits until /metrics has a line matching
# PATTERN, for at most TENTHS tenths of a second (600: a minute).
metrics() {
	i=0
	limit=${2:-600}
	while :; do
		if curl -fsS "http://127.0.0.1:$port/metrics" >"$scratch/metrics" 2>/dev/null &&
			grep -Eq "$1" "$scratch/metrics"; then
			return 0
		fi
		kill -0 "$jw_pid" 2>/dev/null || { cat "$scratch/jobwatch.log"; fail "jobwatch exited"; }
		i=$((i + 1))
		[ "$i" -lt "$limit" ] || { cat "$scratch/jobwatch.log"; fail "no /metrics line matching $1 within $((limit / 10)) s"; }
		sleep 0.1 # paces the scrapes
	done
}

mode() { stat -c '%a %U %G' "$1"; }

say "install $old"
getent passwd jobwatch >/dev/null && fail "user jobwatch exists before the install"
dpkg -i "$old" >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -i"; }
want "package state" "$(dpkg-query -W -f='${db:Status-Abbrev}' jobwatch)" "ii "

say "files, modes, user"
want /usr/bin/jobwatch "$(mode /usr/bin/jobwatch)" "755 root root"
want /usr/bin/jobwatch-run "$(mode /usr/bin/jobwatch-run)" "755 root root"
want unit "$(mode /lib/systemd/system/jobwatch.service)" "644 root root"
want config "$(mode /etc/jobwatch/jobwatch.yml)" "644 root root"
want default "$(mode /etc/default/jobwatch)" "644 root root"
want logrotate "$(mode /etc/logrotate.d/jobwatch)" "644 root root"
want copyright "$(mode /usr/share/doc/jobwatch/copyright)" "644 root root"
want changelog "$(mode /usr/share/doc/jobwatch/changelog.gz)" "644 root root"
want "state directory" "$(mode /var/lib/jobwatch)" "750 jobwatch jobwatch"
want "run-log directory" "$(mode /var/log/jobwatch)" "3733 root jobwatch"
want runs.log "$(mode /var/log/jobwatch/runs.log)" "640 root jobwatch"
for f in /etc/jobwatch/jobwatch.yml /etc/default/jobwatch /etc/logrotate.d/jobwatch; do
	dpkg-query -W -f='${Conffiles}\n' jobwatch | grep -q "^ $f " || fail "$f is not a conffile"
done
want "ARGS" "$(sed -n 's/^ARGS=//p' /etc/default/jobwatch)" '""'
want "user" "$(getent passwd jobwatch | cut -d: -f6,7)" "/var/lib/jobwatch:/usr/sbin/nologin"
want "group" "$(id -gn jobwatch)" "jobwatch"
for g in adm systemd-journal; do
	if getent group "$g" >/dev/null; then
		id -nG jobwatch | tr ' ' '\n' | grep -qx "$g" || fail "jobwatch is not in group $g"
	fi
done
[ "$(id -u jobwatch)" -lt 1000 ] || fail "jobwatch is not a system user: uid $(id -u jobwatch)"
systemd-analyze verify /lib/systemd/system/jobwatch.service || fail "systemd-analyze verify"
/usr/bin/jobwatch check-config --config.file=/etc/jobwatch/jobwatch.yml || fail "check-config of the packaged config"

say "run logs: one a user, readable by jobwatch"
setpriv --reuid nobody --regid nogroup --clear-groups \
	/usr/bin/jobwatch run --job other --log /var/log/jobwatch/nobody.log -- true
want nobody.log "$(mode /var/log/jobwatch/nobody.log)" "640 nobody jobwatch"
if setpriv --reuid nobody --regid nogroup --clear-groups \
	/usr/bin/jobwatch run --job other -- true 2>/dev/null; then
	fail "user nobody could write root's runs.log"
fi
if setpriv --reuid nobody --regid nogroup --clear-groups ls /var/log/jobwatch >/dev/null 2>&1; then
	fail "user nobody could list /var/log/jobwatch"
fi
if setpriv --reuid nobody --regid nogroup --clear-groups rm -f /var/log/jobwatch/runs.log 2>/dev/null; then
	fail "user nobody could remove root's runs.log"
fi

if command -v logrotate >/dev/null; then
	say "logrotate: each log rotated and made again with its owner"
	logrotate -f -s "$scratch/logrotate.state" /etc/logrotate.d/jobwatch || fail "logrotate"
	want "nobody.log after rotation" "$(mode /var/log/jobwatch/nobody.log)" "640 nobody jobwatch"
	want "runs.log after rotation" "$(mode /var/log/jobwatch/runs.log)" "640 root jobwatch"
	[ -s /var/log/jobwatch/nobody.log.1 ] || fail "nobody.log was not rotated"
fi

say "crontabs (0600 in a 1730 spool): read with CAP_DAC_READ_SEARCH only"
spool=/var/spool/cron/crontabs
[ -d "$spool" ] || mkdir -p -m 1730 "$spool"
printf '17 * * * * /usr/local/bin/pkgtestcron\n' >"$spool/pkgtest"
chmod 0600 "$spool/pkgtest"
if setpriv --reuid jobwatch --regid jobwatch --init-groups --inh-caps=-all \
	/usr/bin/jobwatch discover --output - 2>/dev/null | grep -q 'name: pkgtestcron'; then
	fail "jobwatch read a 0600 crontab without CAP_DAC_READ_SEARCH"
fi
# shellcheck disable=SC2086 # as_unit is setpriv's flags
setpriv $as_unit /usr/bin/jobwatch discover --output - 2>/dev/null | grep -q 'name: pkgtestcron' ||
	fail "jobwatch with the unit's capability did not read the crontab"
rm "$spool/pkgtest"

say "configure, run a wrapped job, start jobwatch as the unit does"
sed -i 's/^jobs:$/jobs:\n  - name: pkgtest    # added by install.sh\n    every: 1h/' /etc/jobwatch/jobwatch.yml
# Discovery's shortest interval, so that the new cron file below is seen
# within 10 s rather than the packaged minute.
sed -i 's/^  interval: 1m /  interval: 10s/' /etc/jobwatch/jobwatch.yml
grep -q '^  interval: 10s' /etc/jobwatch/jobwatch.yml || fail "no discovery interval to shorten in the packaged config"
sed -i "s/^ARGS=.*/ARGS=\"--web.listen-address=127.0.0.1:$port --sources.startup-hold=0s\"/" /etc/default/jobwatch
/usr/bin/jobwatch check-config --config.file=/etc/jobwatch/jobwatch.yml >/dev/null || fail "check-config after the edit"
/usr/bin/jobwatch-run --job pkgtest --lock /run/lock/pkgtest.lock -- true
# Host mode: a cron job of the host is watched with no job written for it.
printf '23 4 * * * root /usr/local/bin/pkghost\n' >/etc/cron.d/pkghost
start_jobwatch
metrics '^jobwatch_job_runs_total\{job_name="pkgtest",result="success"\} 1$'
metrics '^jobwatch_job_info\{job_name="pkghost",scope="host"\} 1$'
# A new file in /etc/cron.d is watched within the discovery interval (10 s
# here), without a restart; the bound only stops a broken jobwatch.
printf '41 5 * * * root /usr/local/bin/pkgnew\n' >/etc/cron.d/pkgnew
metrics '^jobwatch_job_info\{job_name="pkgnew",scope="host"\} 1$' 1000
rm /etc/cron.d/pkghost /etc/cron.d/pkgnew
grep -Eq '^jobwatch_source_up\{source="runs",type="runlog"\} 1$' "$scratch/metrics" || fail "source runs is not up"
grep -Eq '^jobwatch_build_info\{' "$scratch/metrics" || fail "no jobwatch_build_info"
want "jobwatch's user" "$(stat -c %U "/proc/$jw_pid")" jobwatch
# A save holds the run: wait for the state on disk, then stop (SIGTERM saves).
i=0
until [ -s /var/lib/jobwatch/state.snap ] || [ -s /var/lib/jobwatch/state.log ]; do
	i=$((i + 1)); [ "$i" -lt 300 ] || fail "no state saved in /var/lib/jobwatch"
	sleep 0.1 # paces the look
done
stop_jobwatch
find /var/lib/jobwatch -mindepth 1 ! -user jobwatch | grep . && fail "state not owned by jobwatch"
state_before=$(cd /var/lib/jobwatch && find . -type f -exec sha256sum {} + | sort)
[ -n "$state_before" ] || fail "empty state directory"

say "upgrade to $new"
dpkg -i "$new" >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -i (upgrade)"; }
want "upgraded version" "$(dpkg-query -W -f='${Version}' jobwatch)" "$(dpkg-deb -f "$new" Version)"
grep -q 'name: pkgtest    # added by install.sh' /etc/jobwatch/jobwatch.yml || fail "the config's edit was lost"
grep -q "127.0.0.1:$port" /etc/default/jobwatch || fail "the ARGS edit was lost"
[ ! -e /etc/jobwatch/jobwatch.yml.dpkg-new ] && [ ! -e /etc/jobwatch/jobwatch.yml.dpkg-old ] || fail "dpkg left a conffile copy"
want "state after the upgrade" "$(cd /var/lib/jobwatch && find . -type f -exec sha256sum {} + | sort)" "$state_before"
want "state directory after the upgrade" "$(mode /var/lib/jobwatch)" "750 jobwatch jobwatch"
want "user after the upgrade" "$(getent passwd jobwatch | cut -d: -f6,7)" "/var/lib/jobwatch:/usr/sbin/nologin"
start_jobwatch
# The state was kept: the run is known without being read again (and not twice).
metrics '^jobwatch_job_runs_total\{job_name="pkgtest",result="success"\} 1$'
stop_jobwatch

say "remove"
dpkg -r jobwatch >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -r"; }
[ ! -e /usr/bin/jobwatch ] || fail "/usr/bin/jobwatch left after remove"
[ ! -e /usr/bin/jobwatch-run ] || fail "/usr/bin/jobwatch-run left after remove"
[ ! -e /lib/systemd/system/jobwatch.service ] || fail "the unit left after remove"
[ -e /etc/jobwatch/jobwatch.yml ] || fail "remove took the conffile (only purge may)"
[ -d /var/lib/jobwatch ] || fail "remove took the state (only purge may)"

say "purge"
dpkg --purge jobwatch >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg --purge"; }
for p in /etc/jobwatch /etc/default/jobwatch /etc/logrotate.d/jobwatch /var/lib/jobwatch /var/log/jobwatch /usr/share/doc/jobwatch; do
	[ ! -e "$p" ] || fail "$p left after purge"
done
dpkg-query -W jobwatch >/dev/null 2>&1 && fail "dpkg still knows jobwatch after purge"
getent passwd jobwatch >/dev/null || fail "purge removed the user (Debian leaves it)"

say "install over a runs.log that jobwatch run wrote before the package"
mkdir -p "$scratch/unpacked"
dpkg-deb -x "$old" "$scratch/unpacked"
"$scratch/unpacked/usr/bin/jobwatch" run --job early -- true
want "runs.log before the package" "$(mode /var/log/jobwatch/runs.log)" "640 root root"
early=$(cat /var/log/jobwatch/runs.log)
[ -n "$early" ] || fail "jobwatch run wrote no record"
dpkg -i "$old" >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -i over runs.log"; }
want "runs.log made the package's" "$(mode /var/log/jobwatch/runs.log)" "640 root jobwatch"
want "run-log directory over runs.log" "$(mode /var/log/jobwatch)" "3733 root jobwatch"
want "runs.log's records" "$(cat /var/log/jobwatch/runs.log)" "$early"
chmod 0600 /var/log/jobwatch/runs.log
dpkg -i "$old" >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -i (reinstall)"; }
want "runs.log's mode, once the package's, on a reinstall" "$(mode /var/log/jobwatch/runs.log)" "600 root jobwatch"
dpkg --purge jobwatch >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg --purge (again)"; }
say "ok"
