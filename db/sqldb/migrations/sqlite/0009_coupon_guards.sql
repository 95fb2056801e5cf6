-- Two guards of the coupon area.
--
-- Grabs Redis accepted and the durable record refused: after Redis was
-- restored from an old snapshot it can hand out a unit SQLite holds already
-- (unit_taken), let a user grab past the template's limit (limit_reached) or,
-- with a corrupt counter, a unit past the stock (no_unit). The flush keeps
-- such a grab here rather than dropping it; the user sees it as a failed
-- coupon and is told once (handled is set when the inbox message is written).
-- A grab is one (template, unit, user, grab time): the same record applied
-- again after a crash finds its row and adds nothing.
CREATE TABLE coupon_conflicts (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	coupon_id   INTEGER NOT NULL REFERENCES coupons (id),
	user_id     INTEGER NOT NULL REFERENCES users (id),
	unit        INTEGER NOT NULL,
	grabbed_ms  INTEGER NOT NULL,
	reason      TEXT NOT NULL CHECK (reason IN ('unit_taken', 'limit_reached', 'no_unit')),
	detected_ms INTEGER NOT NULL,
	handled     INTEGER NOT NULL DEFAULT 0,
	UNIQUE (coupon_id, unit, user_id, grabbed_ms)
);
CREATE INDEX coupon_conflicts_user ON coupon_conflicts (user_id, id);
CREATE INDEX coupon_conflicts_unhandled ON coupon_conflicts (id) WHERE handled = 0;

-- An email or webhook delivery that is pending (an attempt under way) or
-- retrying (waiting for its next attempt) belongs to its worker or its retry
-- task until lease_until_ms (unix ms); past it, the periodic sweep takes it
-- over and makes the next attempt, so a worker that died does not leave it
-- unsent. A delivery that has ended (sent, failed, skipped) has no lease.
ALTER TABLE reminder_deliveries ADD COLUMN lease_until_ms INTEGER;
-- Pending rows from before this migration were claimed by workers that may
-- have died: their lease is over. Retrying rows keep their task an hour (the
-- longest retry delay) and a minute before the sweep steps in.
UPDATE reminder_deliveries SET lease_until_ms = created_ms WHERE status = 'pending';
UPDATE reminder_deliveries SET lease_until_ms = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + 3660000
	WHERE status = 'retrying';
CREATE INDEX reminder_deliveries_lease ON reminder_deliveries (lease_until_ms) WHERE status IN ('pending', 'retrying');
