package sqldb_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/sqldb"
)

// column is what both schemas must agree on for each column.
type column struct {
	Nullable bool
	Kind     string // "integer" or "text": SQLite's affinities, which PostgreSQL's types must match
}

// schema is a database's tables with their columns, and its index names.
type schema struct {
	Tables  map[string]map[string]column
	Indexes []string
}

// The PostgreSQL migrations give the schema SQLite's do: the same tables,
// the same columns with the same nullability and kind, the same indexes.
func TestSchemasAgree(t *testing.T) {
	ctx := context.Background()
	lite, err := sqldb.OpenSQLite(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if dbtest.DatabaseURL(t) == "" {
		t.Skip("TestSchemasAgree needs PostgreSQL: set DATABASE_URL=postgres://… (.ci/run does)")
	}
	pg := dbtest.DB(t)
	want, err := sqliteSchema(ctx, lite)
	if err != nil {
		t.Fatal(err)
	}
	got, err := postgresSchema(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Tables) < 10 {
		t.Fatalf("SQLite schema has only %d tables: %v", len(want.Tables), want.Tables)
	}
	for table, cols := range want.Tables {
		if got.Tables[table] == nil {
			t.Errorf("table %s: in SQLite, missing in PostgreSQL", table)
			continue
		}
		for name, c := range cols {
			if g, ok := got.Tables[table][name]; !ok {
				t.Errorf("%s.%s: in SQLite, missing in PostgreSQL", table, name)
			} else if g != c {
				t.Errorf("%s.%s: SQLite %+v, PostgreSQL %+v", table, name, c, g)
			}
		}
		for name := range got.Tables[table] {
			if _, ok := cols[name]; !ok {
				t.Errorf("%s.%s: in PostgreSQL, missing in SQLite", table, name)
			}
		}
	}
	for table := range got.Tables {
		if want.Tables[table] == nil {
			t.Errorf("table %s: in PostgreSQL, missing in SQLite", table)
		}
	}
	if w, g := strings.Join(want.Indexes, " "), strings.Join(got.Indexes, " "); w != g {
		t.Errorf("indexes differ:\n SQLite     %s\n PostgreSQL %s", w, g)
	}
}

// sqliteSchema reads SQLite's catalogue. A primary key column is never
// null (SQLite's INTEGER PRIMARY KEY is the row ID; its table_info says
// nullable), and the indexes SQLite makes for PRIMARY KEY and UNIQUE are
// left out, as PostgreSQL's are.
func sqliteSchema(ctx context.Context, s *sqldb.DB) (schema, error) {
	sc := schema{Tables: map[string]map[string]column{}}
	rows, err := s.R.QueryContext(ctx, `SELECT m.name, c.name, c."notnull", c.pk, c.type
		FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS c
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		return sc, err
	}
	defer rows.Close()
	for rows.Next() {
		var table, name, typ string
		var notNull, pk int
		if err := rows.Scan(&table, &name, &notNull, &pk, &typ); err != nil {
			return sc, err
		}
		if sc.Tables[table] == nil {
			sc.Tables[table] = map[string]column{}
		}
		sc.Tables[table][name] = column{Nullable: notNull == 0 && pk == 0, Kind: kind(typ)}
	}
	if err := rows.Err(); err != nil {
		return sc, err
	}
	sc.Indexes, err = names(ctx, s, `SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite\_autoindex%' ESCAPE '\'`)
	return sc, err
}

// postgresSchema reads PostgreSQL's catalogue for the current schema,
// leaving out the indexes behind PRIMARY KEY and UNIQUE constraints.
func postgresSchema(ctx context.Context, s *sqldb.DB) (schema, error) {
	sc := schema{Tables: map[string]map[string]column{}}
	rows, err := s.R.QueryContext(ctx, `SELECT table_name, column_name, is_nullable, CASE WHEN data_type = 'USER-DEFINED' THEN udt_name ELSE data_type END
		FROM information_schema.columns WHERE table_schema = current_schema()`)
	if err != nil {
		return sc, err
	}
	defer rows.Close()
	for rows.Next() {
		var table, name, nullable, typ string
		if err := rows.Scan(&table, &name, &nullable, &typ); err != nil {
			return sc, err
		}
		if sc.Tables[table] == nil {
			sc.Tables[table] = map[string]column{}
		}
		sc.Tables[table][name] = column{Nullable: nullable == "YES", Kind: kind(typ)}
	}
	if err := rows.Err(); err != nil {
		return sc, err
	}
	sc.Indexes, err = names(ctx, s, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()
		AND indexname NOT IN (SELECT conname FROM pg_constraint)`)
	return sc, err
}

// kind is the class of a declared type: integer, text or bytes.
func kind(typ string) string {
	switch t := strings.ToLower(typ); {
	case strings.Contains(t, "int"):
		return "integer"
	case t == "text" || t == "citext":
		return "text"
	case t == "blob" || t == "bytea":
		return "bytes"
	default:
		return fmt.Sprintf("other (%s)", typ)
	}
}

func names(ctx context.Context, s *sqldb.DB, q string) ([]string, error) {
	rows, err := s.R.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out, rows.Err()
}
