package discover

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"github.com/jobwatch/jobwatch/internal/cronlog"
)

// CronDefaults is Debian's file of cron's options: the unit runs
// `cron -f $EXTRA_OPTS` with it as its EnvironmentFile.
const CronDefaults = "/etc/default/cron"

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
	if l, ok := cronLevelOf(data); ok {
		h.CronLogLevel = l
	}
}

// cronLevelOf reads the -L of the last EXTRA_OPTS assignment of an
// environment file, as the shell and systemd take it: quotes removed,
// "-L N" or "-LN". ok is false when no assignment gives one (the default,
// 1, holds).
func cronLevelOf(data []byte) (level int, ok bool) {
	level = cronlog.DefaultLevel
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		v, found := strings.CutPrefix(line, "EXTRA_OPTS=")
		if !found {
			continue // comments (bookworm's "#EXTRA_OPTS=" among them) and other keys
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		level, ok = cronlog.DefaultLevel, false
		f := strings.Fields(v)
		for i, a := range f {
			arg := ""
			switch {
			case a == "-L" && i+1 < len(f):
				arg = f[i+1]
			case strings.HasPrefix(a, "-L") && len(a) > 2:
				arg = a[2:]
			default:
				continue
			}
			if n, err := strconv.Atoi(arg); err == nil && n >= 0 && n <= 15 {
				level, ok = n, true
			}
		}
	}
	return level, ok
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
