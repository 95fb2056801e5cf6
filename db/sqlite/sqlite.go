// Package sqlite is the old name of the durable store, kept only so that
// db/goods and db/coupon, whose SQL is still SQLite's, build unchanged until
// they are converted (issue 12, PostgreSQL phase 2), which deletes this
// package. New code imports db/sqldb.
package sqlite

import "github.com/seckill/seckill/db/sqldb"

// DB is sqldb.DB.
//
// Deprecated: use sqldb.DB.
type DB = sqldb.DB

// Open opens the SQLite database at path, as sqldb.OpenSQLite.
//
// Deprecated: use sqldb.Open or sqldb.OpenSQLite.
func Open(path string) (*DB, error) { return sqldb.OpenSQLite(path) }
