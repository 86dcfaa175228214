#!/bin/sh
# jobwatch's RPM %post: the state and run-log directories (docs/install.md),
# then systemd told of the unit; enabled by the administrator (or a preset).
mkdir -p /var/lib/jobwatch /var/log/jobwatch
chown jobwatch:jobwatch /var/lib/jobwatch && chmod 0750 /var/lib/jobwatch
chown root:jobwatch /var/log/jobwatch && chmod 3733 /var/log/jobwatch
runs=/var/log/jobwatch/runs.log
if [ ! -e "$runs" ]; then
	install -m 0640 -o root -g jobwatch /dev/null "$runs"
elif [ -f "$runs" ] && [ ! -L "$runs" ] && [ "$(stat -c %U:%G "$runs")" = root:root ]; then
	# Written by a jobwatch run before the package: kept, made as the
	# package makes it (as the .deb's postinst does).
	chown root:jobwatch "$runs" && chmod 0640 "$runs"
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || :
	# $1 is 2 or more on an upgrade: restart a running jobwatch.
	if [ "$1" -ge 2 ]; then systemctl try-restart jobwatch.service >/dev/null 2>&1 || :; fi
fi
exit 0
