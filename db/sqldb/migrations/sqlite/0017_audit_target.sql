-- The orders desk reads who refunded an order, and why, from the audit
-- entry on its target ("order:ID"): one indexed look-up per order page.
CREATE INDEX audit_log_target ON audit_log (target, id);
