package jobruns

import "testing"

// TestParseTable: a plain name, or database.table, is quoted; anything
// that could close its backquotes is refused. (The statements are tested
// against MariaDB by their users: sources/checkin's store: mysql tests and
// wrapper/remote's --record-mysql tests.)
func TestParseTable(t *testing.T) {
	for _, tc := range []struct{ in, schema, name, quoted string }{
		{"job_runs", "", "job_runs", "`job_runs`"},
		{"app.job_runs", "app", "job_runs", "`app`.`job_runs`"},
		{"$x.y_1", "$x", "y_1", "`$x`.`y_1`"},
	} {
		tb, err := ParseTable(tc.in)
		if err != nil || tb.Schema != tc.schema || tb.Name != tc.name || tb.Quoted() != tc.quoted {
			t.Errorf("%q: %+v, %v", tc.in, tb, err)
		}
	}
	for _, bad := range []string{"", "a.b.c", "job`runs", "x; DROP TABLE y", "1runs", "a.", ".b"} {
		if _, err := ParseTable(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
