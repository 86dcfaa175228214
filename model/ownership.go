package model

// AlertAfter is how many failures, missed runs or skips in a row the
// bundled rules alert at for a job (the config's alert_after:; 0: not
// set, the rules' default). The model judges nothing by it: it rides in
// the job's spec for the collector and the status page.
type AlertAfter struct {
	Failures, MissedRuns, Skips int
}
