package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// schemaError is a table or column that is not as the config says. Its
// reason is stable across polls, so the source logs it once.
type schemaError struct {
	reason string // "table missing", "column missing", "column type", "no database"
	msg    string
}

func (e *schemaError) Error() string { return e.msg }

var (
	intTypes  = []string{"tinyint", "smallint", "mediumint", "int", "integer", "bigint"}
	textTypes = []string{"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "binary", "varbinary"}
	timeTypes = []string{"datetime", "timestamp"}
)

// columnTypes are the DATA_TYPEs each column may have.
func (m *Source) columnTypes() []struct {
	key, name string
	types     []string
} {
	c := m.cols
	return []struct {
		key, name string
		types     []string
	}{
		{"id", c.ID, intTypes},
		{"job", c.Job, textTypes},
		{"started_at", c.StartedAt, timeTypes},
		{"finished_at", c.FinishedAt, timeTypes},
		{"status", c.Status, textTypes},
		{"host", c.Host, textTypes},
		{"pid", c.PID, intTypes},
	}
}

// checkSchema checks that the table exists with the configured columns, of
// usable types, that id is indexed, and that jobwatch's user may read it.
// It returns the names of recommended indexes that are missing (advice, not
// an error).
func (m *Source) checkSchema(ctx context.Context, db *sql.DB) (advice []string, err error) {
	schema := m.schema
	if schema == "" {
		var cur sql.NullString
		if err := db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&cur); err != nil {
			return nil, err
		}
		if !cur.Valid {
			return nil, &schemaError{"no database", "no database selected: name one in the dsn (.../dbname) or write table as database.table"}
		}
		schema = cur.String
	}
	rows, err := db.QueryContext(ctx,
		"SELECT COLUMN_NAME, DATA_TYPE, COLUMN_KEY FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
		schema, m.tableName)
	if err != nil {
		return nil, err
	}
	type colInfo struct{ typ, key string }
	have := map[string]colInfo{}
	for rows.Next() {
		var name, typ, key string
		if err := rows.Scan(&name, &typ, &key); err != nil {
			rows.Close()
			return nil, err
		}
		have[strings.ToLower(name)] = colInfo{strings.ToLower(typ), key}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(have) == 0 {
		return nil, &schemaError{"table missing", fmt.Sprintf("table %s.%s does not exist (or jobwatch's user may not read it)", schema, m.tableName)}
	}
	var missing, wrong []string
	for _, c := range m.columnTypes() {
		info, ok := have[strings.ToLower(c.name)]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("columns.%s: column %q not in table %s.%s", c.key, c.name, schema, m.tableName))
		case !slices.Contains(c.types, info.typ):
			wrong = append(wrong, fmt.Sprintf("columns.%s: column %q is %s, want one of %s", c.key, c.name, strings.ToUpper(info.typ), strings.ToUpper(strings.Join(c.types, ", "))))
		case c.key == "id" && info.key == "":
			wrong = append(wrong, fmt.Sprintf("columns.id: column %q has no index (make it the AUTO_INCREMENT primary key)", c.name))
		}
	}
	if len(missing) > 0 {
		return nil, &schemaError{"column missing", strings.Join(append(missing, wrong...), "; ")}
	}
	if len(wrong) > 0 {
		return nil, &schemaError{"column type", strings.Join(wrong, "; ")}
	}
	// The columns exist and have usable types: make sure the user may
	// SELECT them (information_schema may show columns it may not read).
	rows, err = db.QueryContext(ctx, "SELECT "+m.selectList+" FROM "+m.table+" LIMIT 0")
	if err != nil {
		return nil, err
	}
	rows.Close()
	return m.indexAdvice(ctx, db, schema)
}

// indexAdvice names the indexes of examples/job_runs.sql that the first
// start's queries need and the table lacks.
func (m *Source) indexAdvice(ctx context.Context, db *sql.DB, schema string) ([]string, error) {
	rows, err := db.QueryContext(ctx,
		"SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX",
		schema, m.tableName)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	idx := map[string][]string{}
	for rows.Next() {
		var name, col string
		var seq int
		if err := rows.Scan(&name, &seq, &col); err != nil {
			return nil, err
		}
		idx[name] = append(idx[name], strings.ToLower(col))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	hasPrefix := func(cols ...string) bool {
		for _, ic := range idx {
			if len(ic) < len(cols) {
				continue
			}
			ok := true
			for i, c := range cols {
				ok = ok && ic[i] == strings.ToLower(c)
			}
			if ok {
				return true
			}
		}
		return false
	}
	var advice []string
	c := m.cols
	if !hasPrefix(c.Job, c.Status, c.FinishedAt) {
		advice = append(advice, fmt.Sprintf("(%s, %s, %s)", c.Job, c.Status, c.FinishedAt))
	}
	if !hasPrefix(c.Job, c.FinishedAt, c.StartedAt) {
		advice = append(advice, fmt.Sprintf("(%s, %s, %s)", c.Job, c.FinishedAt, c.StartedAt))
	}
	return advice, nil
}
