package mysql

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jobwatch/jobwatch/internal/testsupport/testproc"
	"github.com/jobwatch/jobwatch/model"
	"github.com/jobwatch/jobwatch/sources"
)

// The runs in progress re-read every poll are bounded by model.MaxOpenRuns
// for each configured job: beyond it the oldest (lowest ids) are forgotten;
// what is kept is sorted.
func TestOpenRunsAreBounded(t *testing.T) {
	s, err := New("db", Config{DSN: "u:p@tcp(127.0.0.1:1)/db"}, sources.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	p := &mysqlPosition{V: mysqlPositionVersion}
	for i := model.MaxOpenRuns + 4; i > 0; i-- { // newest first
		p.Open = append(p.Open, int64(i))
	}
	s.capOpen(p)
	if len(p.Open) != model.MaxOpenRuns || p.Open[0] != 5 || !slices.IsSorted(p.Open) {
		t.Fatalf("kept %d ids from %d, sorted %v", len(p.Open), p.Open[0], slices.IsSorted(p.Open))
	}
	p.Open = []int64{9, 3, 7}
	s.capOpen(p)
	if !slices.Equal(p.Open, []int64{3, 7, 9}) {
		t.Fatalf("under the bound: %v", p.Open)
	}
	// A table of three jobs: three times the bound.
	s, err = New("db", Config{DSN: "u:p@tcp(127.0.0.1:1)/db"}, sources.Deps{Jobs: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Open = nil
	for i := 3*model.MaxOpenRuns + 1; i > 0; i-- {
		p.Open = append(p.Open, int64(i))
	}
	s.capOpen(p)
	if len(p.Open) != 3*model.MaxOpenRuns || p.Open[0] != 2 {
		t.Fatalf("three jobs: kept %d ids from %d", len(p.Open), p.Open[0])
	}
	p.Open = []int64{9, 3, 7}
	s.capOpen(p)
	if !slices.Equal(p.Open, []int64{3, 7, 9}) {
		t.Fatalf("under the bound: %v", p.Open)
	}
}

// TestCheckUnreachableNamesServer: check-config names the server it could
// not reach, whatever the password: none, one letter, or one that also
// occurs elsewhere in the DSN.
func TestCheckUnreachableNamesServer(t *testing.T) {
	addr := testproc.FreeAddr(t) // nothing listens there
	for _, pw := range []string{"", "p", "1", "tcp", "jobs"} {
		t.Run("password="+pw, func(t *testing.T) {
			user := "u"
			if pw != "" {
				user += ":" + pw
			}
			s, err := New("db", Config{DSN: user + "@tcp(" + addr + ")/jobs"}, sources.Deps{Jobs: []string{"a"}})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Check(context.Background())
			want := "database unreachable: u@tcp(" + addr + ")/jobs table `job_runs`: "
			if !errors.Is(err, sources.ErrUnreachable) || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Check: %v\nwant %s...", err, want)
			}
			if !strings.Contains(err.Error(), "dial tcp "+addr) {
				t.Errorf("Check: %v, want the dial error in full", err)
			}
		})
	}
}
