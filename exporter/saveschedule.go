package exporter

import "time"

// saveSchedule decides when the saver writes the changed state. Scrapes show
// only saved state, so a save that waits is a record shown late; a save
// writes and fsyncs, so saves must stay rare under a steady stream.
//
//   - A change after a quiet spell (the last save began a SaveInterval or
//     more ago) is saved at once.
//   - Otherwise changes are saved when the slot comes: SaveInterval after
//     the last save began.
//   - Or earlier, once changes have stopped arriving for a settle time (a
//     catch-up of a backlog has ended), unless the last save was itself
//     such an early one. The next slot is then SaveInterval after the
//     early save. A source hands over a backlog in batches, with gaps
//     between them that grow with the machine's load (20-110 ms measured
//     at a load of 11 on 2 cores), so the settle time is settleGaps times
//     the longest gap before a change since the last save, at least
//     minSettle and at most a quarter of SaveInterval. A catch-up that
//     pauses longer than that is saved early in part, and the rest at the
//     slot a SaveInterval after that.
//
// So no change waits more than SaveInterval to be saved; under a stream
// whose changes come closer than minSettle, or than a quarter of
// SaveInterval once they have for a while, saves come once per SaveInterval;
// and under any stream there is at most one early save between two regular
// ones, so at most two saves per SaveInterval.
//
// It is told the times (the saver's clock) and never reads a clock itself,
// so tests step it.
type saveSchedule struct {
	interval   time.Duration
	dirty      bool          // a change not saved yet
	lastChange time.Time     // when the latest change arrived
	maxGap     time.Duration // the longest gap before a change since the last save
	slot       time.Time     // the earliest regular save; zero: at once
	earlyTaken bool          // the last save was an early one
}

// The settle time: settleGaps times the longest gap between changes, at
// least minSettle.
const (
	settleGaps = 4
	minSettle  = 50 * time.Millisecond
)

func newSaveSchedule(interval time.Duration) *saveSchedule {
	return &saveSchedule{interval: interval}
}

// change records that the state changed at now.
func (s *saveSchedule) change(now time.Time) {
	if !s.lastChange.IsZero() { // the gap before the first change after a save counts too
		s.maxGap = max(s.maxGap, now.Sub(s.lastChange))
	}
	s.dirty, s.lastChange = true, now
}

// settle is how long changes must have stopped for an early save.
func (s *saveSchedule) settle() time.Duration {
	return min(max(settleGaps*s.maxGap, minSettle), s.interval/4)
}

// due returns when the next save is due, and false when nothing is to be
// saved.
func (s *saveSchedule) due() (time.Time, bool) {
	if !s.dirty {
		return time.Time{}, false
	}
	at := s.slot
	if quiet := s.lastChange.Add(s.settle()); !s.earlyTaken && quiet.Before(at) {
		at = quiet
	}
	return at, true
}

// begin records that a save due at or before now begins; the changes so far
// are in it.
func (s *saveSchedule) begin(now time.Time) {
	s.dirty, s.maxGap = false, 0
	s.earlyTaken = now.Before(s.slot)
	s.slot = now.Add(s.interval)
}

// failed records that the save begun at now failed: its changes are retried
// one SaveInterval later, not earlier.
func (s *saveSchedule) failed(now time.Time) {
	s.dirty = true
	s.slot = now.Add(s.interval)
	s.earlyTaken = true
}
