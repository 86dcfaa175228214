package model

// AlertAfter is how many failures, missed runs or skips in a row the
// bundled rules alert at for a job (the config's alert_after:; 0: not
// set, the rules' default). The model judges nothing by it: it rides in
// the job's spec for the collector and the status page.
type AlertAfter struct {
	Failures, MissedRuns, Skips int
}

// DefaultAlertAfter is what the bundled rules alert at when a job sets no
// threshold: 2 failures, 1 missed run, 3 skips in a row.
var DefaultAlertAfter = AlertAfter{Failures: 2, MissedRuns: 1, Skips: 3}

// OrDefault is a with the counts it leaves unset (0) DefaultAlertAfter's.
func (a AlertAfter) OrDefault() AlertAfter {
	or := func(v, d int) int {
		if v > 0 {
			return v
		}
		return d
	}
	d := DefaultAlertAfter
	return AlertAfter{Failures: or(a.Failures, d.Failures), MissedRuns: or(a.MissedRuns, d.MissedRuns), Skips: or(a.Skips, d.Skips)}
}
