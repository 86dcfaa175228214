package status

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestListPage(t *testing.T) {
	var rep Report
	for _, name := range []string{"a", "b", "c"} {
		j := Job{Name: name}
		for range 30 {
			j.RecentRuns = append(j.RecentRuns, Run{OutputRef: "checkin:1:0"}, Run{Output: strings.Repeat("é", 700)})
		}
		rep.Jobs = append(rep.Jobs, j)
	}
	read := func(string) (string, error) { return strings.Repeat("y", 5000) + "end", nil }
	page, err := listPage(rep, url.Values{"limit": {"2"}}, read)
	if err != nil || len(page.Jobs) != 2 || page.Next != "b" {
		t.Fatalf("first page: %d jobs, next %q, %v", len(page.Jobs), page.Next, err)
	}
	for _, r := range page.Jobs[0].RecentRuns {
		if len(r.Output) > ListExcerpt || !strings.HasSuffix(r.Output, "end") && !strings.HasSuffix(r.Output, "é") || !utf8.ValidString(r.Output) {
			t.Fatalf("excerpt of %d bytes: %.30q", len(r.Output), r.Output)
		}
	}
	if n := len(page.Jobs[0].RecentRuns); n != ListRuns {
		t.Errorf("%d runs in the list, want %d", n, ListRuns)
	}
	if rep.Jobs[0].RecentRuns[0].Output != "" {
		t.Error("the list changed the report's runs")
	}
	page, _ = listPage(rep, url.Values{"limit": {"2"}, "after": {"b"}}, read)
	if len(page.Jobs) != 1 || page.Jobs[0].Name != "c" || page.Next != "" {
		t.Errorf("second page: %+v", page)
	}
	for _, bad := range []string{"0", "x", "1001"} {
		if _, err := listPage(rep, url.Values{"limit": {bad}}, read); err == nil {
			t.Errorf("limit %q accepted", bad)
		}
	}
}
