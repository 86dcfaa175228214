// Package schedule computes when a job's runs are expected.
package schedule

import "time"

// Schedule yields expected run times.
type Schedule interface {
	// Next returns the first expected run strictly after t.
	Next(t time.Time) time.Time
	// Prev returns the last expected run at or before t.
	Prev(t time.Time) time.Time
}

// Every is a fixed period: runs are expected one period apart, counted from
// whatever run came last.
type Every time.Duration

func (e Every) Next(t time.Time) time.Time { return t.Add(time.Duration(e)) }

// Prev has no grid to look back on for a fixed period: it returns t.
func (e Every) Prev(t time.Time) time.Time { return t }
