package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"jobwatch/model"
)

var (
	lockLabels = []string{"job_name", "lock"}

	lockHeldDesc        = desc("lock_held", "1 while the job's lock is held (lock: the configured path, key or lock name).", lockLabels...)
	lockAliveDesc       = desc("lock_holder_alive", "1 when the lock's holder is known to be alive, 0 when known to be dead (a stale lock: every run will skip); absent when not held or unknown.", lockLabels...)
	lockHeldSecondsDesc = desc("lock_held_seconds", "How long the lock has been held: since its holder process started, the lock file was written, or jobwatch first saw it held.", lockLabels...)
	lockTTLDesc         = desc("lock_ttl_seconds", "Remaining lease of a held Redis lock key.", lockLabels...)
	lockExpiresDesc     = desc("lock_expires", "For a held Redis lock key: 1 when it has a TTL, 0 when it never expires.", lockLabels...)
	lockHolderDesc      = desc("lock_holder_info", "Who holds the lock (holder: pid 4242, the Redis value, conn 17 from 10.0.0.5); always 1.", "job_name", "lock", "holder")
	lockProbeErrorsDesc = desc("lock_probe_errors_total", "Probes of the lock that failed (server down, permission denied) since jobwatch started.", lockLabels...)
)

var lockDescs = []*prometheus.Desc{lockHeldDesc, lockAliveDesc, lockHeldSecondsDesc, lockTTLDesc, lockExpiresDesc, lockHolderDesc, lockProbeErrorsDesc}

func collectLock(ch chan<- prometheus.Metric, l *model.LockState, now float64) {
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l.Job, l.Lock)
	}
	gauge(lockHeldDesc, boolFloat(l.Held))
	ch <- prometheus.MustNewConstMetric(lockProbeErrorsDesc, prometheus.CounterValue, float64(l.ProbeErrors), l.Job, l.Lock)
	if !l.Held {
		return
	}
	switch l.Alive {
	case model.HolderAlive:
		gauge(lockAliveDesc, 1)
	case model.HolderDead:
		gauge(lockAliveDesc, 0)
	}
	if !l.HeldSince.IsZero() {
		gauge(lockHeldSecondsDesc, max(now-unix(l.HeldSince), 0))
	}
	if l.HasTTL {
		gauge(lockTTLDesc, l.TTL.Seconds())
	}
	if l.HasTTL || l.NoExpiry {
		gauge(lockExpiresDesc, boolFloat(l.HasTTL))
	}
	if l.Holder != "" {
		ch <- prometheus.MustNewConstMetric(lockHolderDesc, prometheus.GaugeValue, 1, l.Job, l.Lock, l.Holder)
	}
}
