#!/bin/sh
# jobwatch's RPM %pre: the jobwatch system user and group (kept on erase).
getent group jobwatch >/dev/null || groupadd --system jobwatch
getent passwd jobwatch >/dev/null || useradd --system --gid jobwatch \
	--home-dir /var/lib/jobwatch --no-create-home --shell /sbin/nologin \
	--comment "jobwatch exporter" jobwatch
for g in adm systemd-journal; do
	if getent group "$g" >/dev/null; then usermod --append --groups "$g" jobwatch; fi
done
exit 0
