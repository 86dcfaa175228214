#!/bin/sh
# jobwatch's RPM %postun. RPM has no purge: the state in /var/lib/jobwatch and
# the run logs stay after an erase; remove them by hand.
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || :; fi
exit 0
