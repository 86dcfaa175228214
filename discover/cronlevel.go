package discover

import (
	"strings"

	"github.com/jobwatch/jobwatch/internal/cronlog"
)

// CronDefaults is Debian's file of cron's options.
const CronDefaults = cronlog.DefaultsFile

// KindCronLevel: cron's -L lets jobwatch see its jobs' runs only in part
// (Debian's default, -L 1: starts only).
const KindCronLevel = "cron_log_level"

// readCronLevel sets h.CronLogLevel from the -L of EXTRA_OPTS in
// /etc/default/cron (Debian's cron; cronie logs starts only): what the
// journal source's cron_log_level is set to, and what checkCronLevel
// judges.
func (h *Host) readCronLevel() {
	h.CronLogLevel = cronlog.DefaultLevel
	if h.Flavour != Debian {
		return
	}
	data, ok := readNoting(h.Root, CronDefaults, &h.Notes)
	if !ok {
		return
	}
	if l, ok := cronlog.LevelOfDefaults(data); ok {
		h.CronLogLevel = l
	}
}

// checkCronLevel warns when the host's cron logs its jobs' runs only in
// part and a journal source reads them (watchKind "cron"): a note, not a
// warning (discover exits 0 on a stock Debian, whose -L is 1).
func checkCronLevel(h *Host) []Finding {
	if h.Flavour != Debian {
		return nil
	}
	gaps := cronlog.LevelGaps(h.CronLogLevel)
	if gaps == "" {
		return nil
	}
	var names []string
	for i := range h.Jobs {
		if watchKind(h, &h.Jobs[i]) == "cron" {
			names = append(names, h.Jobs[i].Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return []Finding{{File: CronDefaults, Kind: KindCronLevel, Severity: Info,
		Message: gaps + " (cron jobs: " + strings.Join(names, ", ") + ")", Fix: cronlog.LevelFix}}
}
