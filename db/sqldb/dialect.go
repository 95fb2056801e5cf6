package sqldb

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"

	"github.com/seckill/seckill/db"
)

// Dialect is which database a DB speaks to. Queries are written once, in
// SQL both accept (INSERT … ON CONFLICT DO NOTHING, RETURNING id, UPDATE …
// FROM, ? placeholders); what cannot be written once is a method here.
type Dialect string

// The dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Rebind turns a query written with SQLite's placeholders (? and ?NNN) into
// the dialect's: unchanged for SQLite, $1, $2, … for PostgreSQL, where the
// connector (postgres.go) applies it to every statement. Text inside string
// literals, quoted identifiers, comments and dollar-quoted bodies is left
// alone. As in SQLite, a bare ? takes the number after the highest used so far.
func (d Dialect) Rebind(q string) string {
	if d != Postgres || strings.IndexByte(q, '?') < 0 {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0 // the highest parameter number so far
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) {
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c { // a doubled quote stays inside
						j += 2
						continue
					}
					j++
					break
				}
				j++
			}
			b.WriteString(q[i:j])
			i = j
		case c == '-' && strings.HasPrefix(q[i:], "--"):
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				j = len(q) - i
			} else {
				j += 4
			}
			b.WriteString(q[i : i+j])
			i += j
		case c == '$':
			j := dollarQuoteEnd(q, i)
			b.WriteString(q[i:j])
			i = j
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			num := n + 1
			if j > i+1 {
				num, _ = strconv.Atoi(q[i+1 : j])
			}
			n = max(n, num)
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(num))
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// dollarQuoteEnd returns where the dollar-quoted string starting at q[i]
// ends ($$…$$ or $tag$…$tag$), or i+1 when q[i] starts none ($1, a lone $).
func dollarQuoteEnd(q string, i int) int {
	j := i + 1
	for j < len(q) && (q[j] == '_' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z' || j > i+1 && q[j] >= '0' && q[j] <= '9') {
		j++
	}
	if j >= len(q) || q[j] != '$' {
		return i + 1
	}
	tag := q[i : j+1]
	if k := strings.Index(q[j+1:], tag); k >= 0 {
		return j + 1 + k + len(tag)
	}
	return len(q)
}

// createMigrations is the table that records applied migrations, with the
// dialect's clock for applied_at (UTC, RFC 3339 with milliseconds in both).
func (d Dialect) createMigrations() string {
	if d == Postgres {
		return `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))`
	}
	return `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))`
}

// createStage makes a temporary table afresh: PostgreSQL drops it at the
// end of the transaction; SQLite, which cannot, drops it at the next stage of
// the same name on the connection.
func (d Dialect) createStage(name, columns string) string {
	if d == Postgres {
		return fmt.Sprintf(`DROP TABLE IF EXISTS pg_temp.%s; CREATE TEMP TABLE %s (%s) ON COMMIT DROP`, name, name, columns)
	}
	return fmt.Sprintf(`DROP TABLE IF EXISTS temp.%s; CREATE TEMP TABLE %s (%s)`, name, name, columns)
}

// IsUniqueViolation reports whether err is a refused duplicate of a unique
// index or primary key, in either dialect. On PostgreSQL the failed
// statement also ends the transaction: prefer INSERT … ON CONFLICT DO
// NOTHING and RowsAffected where a duplicate is expected.
func IsUniqueViolation(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" // unique_violation
}

// IsPassing reports whether err is a failure that goes away on its own:
// SQLite busy or locked past the busy timeout, a PostgreSQL serialization
// failure, deadlock or lock timeout. The work may be tried again.
func IsPassing(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "55P03": // serialization_failure, deadlock_detected, lock_not_available
			return true
		}
	}
	return false
}

// Classify returns err as db.ErrUnavailable (the cause kept in the chain)
// when it is passing, so callers answer 503 with Retry-After instead of 500;
// any other error comes back unchanged.
func Classify(err error) error {
	if err == nil || !IsPassing(err) {
		return err
	}
	return fmt.Errorf("%w: %w", db.ErrUnavailable, err)
}
