package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// maxRowsPerInsert bounds one multi-row INSERT on SQLite, whose statements
// take at most 32766 variables.
const maxRowsPerInsert = 1000

// InsertRows appends rows (values in the order of columns) to table inside
// tx, in as few round trips as the store allows: one COPY on PostgreSQL,
// multi-row INSERTs of up to a thousand rows on SQLite. It returns how many
// rows it wrote. It handles no conflicts: a duplicate fails the whole call;
// to skip or merge duplicates, Stage the rows and apply them with
// INSERT … SELECT … WHERE true ON CONFLICT or UPDATE … FROM.
func (s *DB) InsertRows(ctx context.Context, tx *sql.Tx, table string, columns []string, rows [][]any) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	if s.Dialect == Postgres {
		res, err := tx.ExecContext(ctx, "COPY "+table, &copyRows{table: table, columns: columns, rows: rows})
		if err != nil {
			return 0, fmt.Errorf("copy %d rows into %s: %w", len(rows), table, err)
		}
		return res.RowsAffected()
	}
	per := max(1, min(maxRowsPerInsert, 32766/len(columns)))
	row := "(" + placeholders(len(columns)) + ")"
	var total int64
	for start := 0; start < len(rows); start += per {
		chunk := rows[start:min(start+per, len(rows))]
		var q strings.Builder
		q.WriteString("INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES ")
		args := make([]any, 0, len(chunk)*len(columns))
		for i, r := range chunk {
			if len(r) != len(columns) {
				return total, fmt.Errorf("insert into %s: row %d has %d values for %d columns", table, start+i, len(r), len(columns))
			}
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(row)
			args = append(args, r...)
		}
		res, err := tx.ExecContext(ctx, q.String(), args...)
		if err != nil {
			return total, fmt.Errorf("insert %d rows into %s: %w", len(chunk), table, err)
		}
		n, _ := res.RowsAffected()
		total += n
	}
	return total, nil
}

// Column is a column of a staged table: a name and a type both dialects
// know (BIGINT, TEXT).
type Column struct{ Name, Type string }

// Stage loads rows into a temporary table called name, made afresh with the
// given columns and seen only by tx's connection, so that a batch (the
// records of one flush) is applied with one set-based statement that joins
// it: UPDATE target SET … FROM name AS b WHERE …, or INSERT INTO target
// SELECT … FROM name WHERE true ON CONFLICT DO NOTHING (SQLite needs the
// WHERE to read ON CONFLICT as the upsert's). Rows arrive by COPY on
// PostgreSQL, by multi-row INSERT on SQLite.
func (s *DB) Stage(ctx context.Context, tx *sql.Tx, name string, columns []Column, rows [][]any) error {
	defs := make([]string, len(columns))
	names := make([]string, len(columns))
	for i, c := range columns {
		defs[i], names[i] = c.Name+" "+c.Type, c.Name
	}
	if _, err := tx.ExecContext(ctx, s.Dialect.createStage(name, strings.Join(defs, ", "))); err != nil {
		return fmt.Errorf("stage %s: %w", name, err)
	}
	_, err := s.InsertRows(ctx, tx, name, names, rows)
	return err
}

// Querier is what runs a query: a *sql.DB or a *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// IDs runs a statement whose rows are one integer each (user or goods IDs)
// and returns them in the order read.
func IDs(ctx context.Context, q Querier, query string, args ...any) ([]int64, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
