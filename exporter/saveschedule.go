package exporter

import "time"

// commitSchedule decides when the saver commits the changed state (group
// commit). Scrapes show only committed state, so a commit that waits is a
// record shown late; a commit appends to the log and fdatasyncs it, about a
// millisecond, so a lone change need not wait at all. But every commit also
// writes the log's last 4 KiB page to disk again, so under a steady stream
// commits must stay few (at 20 a second that page alone is 4.9 MB a minute).
//
//   - A change is committed at once, unless a commit began less than gap
//     ago or is in flight: then it waits for the next commit, gap after the
//     last one began, which holds everything that arrived meanwhile.
//   - Commits draw on a budget (a token bucket): it fills at one commit per
//     every, holds at most burst, and a commit waits until there is one in
//     it. Lone changes, even a few close together, find the budget full and
//     are committed at once; a stream that lasts is committed once per every,
//     each commit holding all that came since the one before.
//   - A change of verdicts alone (changeLazy: records decided at their
//     watermark, whose facts were committed when they were read) is
//     committed with the next change, or lazyDelay after it was made:
//     under a stream of live records every record's verdict follows its
//     fact a late window later, and committing each at once spent the
//     budget twice as fast, so that facts waited for it.
//   - A commit that took long (a catch-up changes every job, and a commit
//     takes the model's lock to copy them) is followed by idleCost times its
//     length without one, at most every (a slow disk must not hold back a
//     lone record for seconds): a catch-up is then not slowed much by
//     commits of it.
//
// So a lone record is durable and shown one commit after it is read; under
// any stream no change waits more than every after the commit before it
// began (beyond a commit still in flight and its idle time after), commits
// begin at least gap apart, and over any span of time there are at most burst commits more
// than one per every. A failed commit is retried retry after it began.
//
// It is told the times (the saver's clock) and never reads a clock itself,
// so tests step it.
type commitSchedule struct {
	gap   time.Duration // the least time between the starts of two commits
	every time.Duration // the budget's rate: one commit per every
	retry time.Duration // the least time from a failed commit to the next
	dirty bool          // a change not committed yet
	// lazy: a change of verdicts alone not committed yet, due at lazyAt
	// at the earliest.
	lazy   bool
	lazyAt time.Time
	next   time.Time // the earliest the next commit may begin; zero: at once
	// The budget as of at, in time: every is one commit, at most
	// burst*every. A zero at: full.
	credit time.Duration
	at     time.Time
}

const (
	// saveRetry is the least time from a failed commit to its retry: a
	// disk full is not fixed in milliseconds, and every failure is logged.
	saveRetry = time.Second
	// streamCommitEvery and commitBurst are the commit budget: a stream
	// that lasts is committed 3 times a second (each commit writes a 4 KiB
	// page again: 0.8 MB a minute at that rate); 10 commits may come
	// closer, down to the gap.
	streamCommitEvery = 300 * time.Millisecond
	commitBurst       = 10
	// idleCost is how many times its own length (at most
	// streamCommitEvery) the saver waits after a commit before the next.
	idleCost = 20
	// lazyDelay is how long a change of verdicts alone waits for a change
	// to be committed with.
	lazyDelay = time.Second
)

func newCommitSchedule(gap time.Duration) *commitSchedule {
	return &commitSchedule{gap: gap, every: max(gap, streamCommitEvery), retry: max(gap, saveRetry)}
}

// change records that the state changed at now.
func (s *commitSchedule) change(time.Time) { s.dirty = true }

// changeLazy records that verdicts alone changed at now.
func (s *commitSchedule) changeLazy(now time.Time) {
	if !s.lazy {
		s.lazy, s.lazyAt = true, now.Add(lazyDelay)
	}
}

// due returns when the next commit is due, and false when nothing is to be
// committed.
func (s *commitSchedule) due() (time.Time, bool) {
	at := s.next
	if !s.at.IsZero() && s.credit < s.every {
		at = later(s.next, s.at.Add(s.every-s.credit))
	}
	if !s.dirty && s.lazy {
		return later(at, s.lazyAt), true
	}
	return at, s.dirty
}

// caughtUp makes a commit due at once, at least gap after the last
// began, whatever the budget and the idle time after a slow commit: a
// source has read to its end after a catch-up (model.Tracker.CaughtUp,
// once per catch-up), and its last records would otherwise wait up to
// every to be shown.
func (s *commitSchedule) caughtUp() {
	s.dirty = true
	if !s.at.IsZero() {
		s.next = s.at.Add(s.gap)
		s.credit = max(s.credit, s.every)
	}
}

// begin records that a commit due at or before now begins; the changes so
// far are in it.
func (s *commitSchedule) begin(now time.Time) {
	full := commitBurst * s.every
	if s.at.IsZero() {
		s.credit = full
	} else {
		s.credit = min(s.credit+now.Sub(s.at), full)
	}
	s.credit -= s.every
	s.at = now
	s.dirty, s.lazy = false, false
	s.next = now.Add(s.gap)
}

// done records that the commit begun at began ended at now.
func (s *commitSchedule) done(began, now time.Time) {
	s.next = later(s.next, now.Add(idleAfter(now.Sub(began), s.every)))
}

// idleAfter is how long no commit begins after one that took took.
func idleAfter(took, every time.Duration) time.Duration {
	return min(idleCost*took, every)
}

// failed records that the commit begun at now failed: its changes are
// retried a retry later.
func (s *commitSchedule) failed(now time.Time) {
	s.dirty = true
	s.next = now.Add(s.retry)
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
