-- Account and audit times in unix milliseconds (INTEGER, named *_ms), as in
-- the rest of the schema. users.created_at and audit_log.at held RFC 3339
-- text (Go's RFC3339Nano in UTC: "2006-01-02T15:04:05.999999999Z", the
-- fraction cut short or left out); julianday reads it, whatever the number of
-- fraction digits, to the millisecond.

-- users is the parent of most foreign keys: rebuilding it would need
-- foreign_keys off, which cannot change inside this migration's transaction.
-- So the new column is added and filled and the old one dropped, which keeps
-- the table, its rows, its place in the column order and every reference.
ALTER TABLE users ADD COLUMN created_ms INTEGER NOT NULL DEFAULT 0;
UPDATE users SET created_ms = CAST(ROUND((julianday(created_at) - 2440587.5) * 86400000) AS INTEGER);
ALTER TABLE users DROP COLUMN created_at;

-- The audit log refuses any UPDATE, so it is rebuilt: copied into a new
-- table (ids kept), the old one dropped with its index and triggers, which
-- are made again on the new one.
CREATE TABLE audit_log_new (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	at_ms    INTEGER NOT NULL,
	actor_id INTEGER NULL,
	actor    TEXT NOT NULL DEFAULT '',
	action   TEXT NOT NULL,
	target   TEXT NOT NULL DEFAULT '',
	detail   TEXT NOT NULL DEFAULT '',
	ip       TEXT NOT NULL DEFAULT ''
);
INSERT INTO audit_log_new (id, at_ms, actor_id, actor, action, target, detail, ip)
	SELECT id, CAST(ROUND((julianday(at) - 2440587.5) * 86400000) AS INTEGER), actor_id, actor, action, target, detail, ip
	FROM audit_log ORDER BY id;
DROP TABLE audit_log;
ALTER TABLE audit_log_new RENAME TO audit_log;
CREATE INDEX audit_log_actor ON audit_log (actor_id, id);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit log is append-only');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit log is append-only');
END;
