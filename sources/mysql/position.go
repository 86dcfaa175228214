package mysql

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// mysqlPositionVersion changes when the meaning of the position does.
const mysqlPositionVersion = 1

// mysqlPosition is where a mysql source resumes. Together with the events of
// the batch it was stored with, it says exactly which rows were counted:
//
//   - every row with id <= ID was read, except the ids in Gaps;
//   - the rows in Open were read in progress: their Start was emitted, their
//     End was not;
//   - every other row with id <= ID was read finished (Start and End, or
//     Skip, emitted) and is never read again.
//
// Gaps are ids below ID that were missing when the rows around them were
// read: transactions that had not committed yet (and may, later) or that
// rolled back. Each is looked for until Since + late_window.
type mysqlPosition struct {
	V    int        `json:"v"`
	ID   int64      `json:"id"`
	Open []int64    `json:"open,omitempty"`
	Gaps []mysqlGap `json:"gaps,omitempty"`
}

// mysqlGap is the range From..To (inclusive) of ids missing since Since.
type mysqlGap struct {
	From  int64     `json:"from"`
	To    int64     `json:"to"`
	Since time.Time `json:"since"`
}

func parseMySQLPosition(raw []byte) (*mysqlPosition, error) {
	var p mysqlPosition
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.V != mysqlPositionVersion {
		return nil, fmt.Errorf("position version %d, want %d", p.V, mysqlPositionVersion)
	}
	if p.ID < 0 {
		return nil, errors.New("negative id")
	}
	for _, g := range p.Gaps {
		if g.From < 1 || g.To < g.From || g.To > p.ID {
			return nil, fmt.Errorf("bad gap %d..%d", g.From, g.To)
		}
	}
	for _, id := range p.Open {
		if id < 1 || id > p.ID {
			return nil, fmt.Errorf("bad open id %d", id)
		}
	}
	p.normalize()
	return &p, nil
}

// normalize sorts and dedups, so that equal states encode equally.
func (p *mysqlPosition) normalize() {
	slices.Sort(p.Open)
	p.Open = slices.Compact(p.Open)
	slices.SortFunc(p.Gaps, func(a, b mysqlGap) int {
		if a.From != b.From {
			return cmp.Compare(a.From, b.From)
		}
		return cmp.Compare(a.To, b.To)
	})
	for i := range p.Gaps {
		p.Gaps[i].Since = p.Gaps[i].Since.UTC()
	}
}

func (p *mysqlPosition) clone() *mysqlPosition {
	return &mysqlPosition{V: p.V, ID: p.ID, Open: slices.Clone(p.Open), Gaps: slices.Clone(p.Gaps)}
}

func (p *mysqlPosition) encode() []byte {
	p.normalize()
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // plain fields always marshal
	}
	return b
}

// removeFound takes the ids found (sorted) out of the gaps.
func removeFound(gaps []mysqlGap, found []int64) []mysqlGap {
	if len(found) == 0 {
		return gaps
	}
	var out []mysqlGap
	for _, g := range gaps {
		from := g.From
		i, _ := slices.BinarySearch(found, g.From)
		for ; i < len(found) && found[i] <= g.To; i++ {
			if found[i] > from {
				out = append(out, mysqlGap{From: from, To: found[i] - 1, Since: g.Since})
			}
			from = found[i] + 1
		}
		if from <= g.To {
			out = append(out, mysqlGap{From: from, To: g.To, Since: g.Since})
		}
	}
	return out
}
