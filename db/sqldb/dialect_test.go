package sqldb_test

import (
	"testing"

	"github.com/seckill/seckill/db/sqldb"
)

func TestRebind(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE b = ? AND c IN (?, ?)`, `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)`},
		{`SELECT MAX(id) FROM (SELECT id FROM a WHERE g = ?1 UNION ALL SELECT id FROM b WHERE g = ?1)`,
			`SELECT MAX(id) FROM (SELECT id FROM a WHERE g = $1 UNION ALL SELECT id FROM b WHERE g = $1)`},
		{`SELECT ?2, ?, ?1, ?`, `SELECT $2, $3, $1, $4`}, // a bare ? follows the highest number so far, as in SQLite
		{`SELECT 'what?', "odd?col", ? -- really?`, `SELECT 'what?', "odd?col", $1 -- really?`},
		{`SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
		{"SELECT /* ? */ ? -- ?\n, ?", "SELECT /* ? */ $1 -- ?\n, $2"},
		{`CREATE FUNCTION f() RETURNS int AS $$ SELECT '?' $$; SELECT ?`, `CREATE FUNCTION f() RETURNS int AS $$ SELECT '?' $$; SELECT $1`},
		{`DO $body$ BEGIN PERFORM ?; END $body$`, `DO $body$ BEGIN PERFORM ?; END $body$`},
		{`SELECT 'unterminated ?`, `SELECT 'unterminated ?`},
	} {
		if got := sqldb.Postgres.Rebind(tc.in); got != tc.want {
			t.Errorf("Postgres.Rebind(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if got := sqldb.SQLite.Rebind(tc.in); got != tc.in {
			t.Errorf("SQLite.Rebind(%q) = %q, want it unchanged", tc.in, got)
		}
	}
}
