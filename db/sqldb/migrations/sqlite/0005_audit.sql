-- The audit log: every admin and merchant change, every sign-in attempt and
-- (later) every refund. Append-only: the triggers refuse any change to a
-- written row, so the record cannot be edited through the application.
CREATE TABLE audit_log (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	at       TEXT NOT NULL,
	actor_id INTEGER NULL,
	actor    TEXT NOT NULL DEFAULT '',
	action   TEXT NOT NULL,
	target   TEXT NOT NULL DEFAULT '',
	detail   TEXT NOT NULL DEFAULT '',
	ip       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_actor ON audit_log (actor_id, id);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit log is append-only');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit log is append-only');
END;
