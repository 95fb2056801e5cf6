-- Merchants end and hide their sales, and give goods a picture.
-- (SQLite's 0012_merchant.sql is the same, with BLOB for BYTEA.)
ALTER TABLE slots ADD COLUMN ended_ms BIGINT;
ALTER TABLE slots ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
ALTER TABLE goods ADD COLUMN ended_ms BIGINT;
ALTER TABLE goods ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
ALTER TABLE goods ADD COLUMN image TEXT NOT NULL DEFAULT '';

CREATE TABLE images (
	hash         TEXT PRIMARY KEY,
	content_type TEXT NOT NULL,
	data         BYTEA NOT NULL,
	created_ms   BIGINT NOT NULL
);
