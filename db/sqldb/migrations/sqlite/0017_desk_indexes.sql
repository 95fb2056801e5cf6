-- The merchant orders desk lists orders newest first (created, then ID),
-- and reads who refunded an order, and why, from the audit entry on its
-- target ("order:ID"): both by index.
CREATE INDEX orders_by_created ON orders (created_ms, id);
CREATE INDEX audit_log_target ON audit_log (target, id);
