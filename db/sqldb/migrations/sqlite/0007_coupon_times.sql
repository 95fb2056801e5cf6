-- Coupon, reminder and inbox times become unix milliseconds in INTEGER
-- columns named *_ms, as goods' are. Until now they were text: RFC 3339 in
-- whole seconds for grab windows (coupons, coupon_reminders and the key of
-- reminder_deliveries), RFC 3339 with nanoseconds everywhere else.
--
-- Each table is rebuilt. The old ones are renamed first, which points the
-- foreign keys of the old children at the old parent; the new tables are
-- created under the final names, filled parent first, and the old ones
-- dropped children first, so no foreign key is ever left dangling while
-- foreign keys are on (they cannot be turned off inside the migration's
-- transaction). Indexes are created once the old ones have gone with their
-- tables. The AUTOINCREMENT counters carry over, so no ID is ever reused.

ALTER TABLE coupons RENAME TO coupons_old;
ALTER TABLE user_coupons RENAME TO user_coupons_old;
ALTER TABLE coupon_reminders RENAME TO coupon_reminders_old;
ALTER TABLE reminder_deliveries RENAME TO reminder_deliveries_old;
ALTER TABLE notifications RENAME TO notifications_old;

CREATE TABLE coupons (
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	shop_id         INTEGER NOT NULL REFERENCES users (id),
	title           TEXT NOT NULL,
	kind            TEXT NOT NULL CHECK (kind IN ('amount_off', 'percent_off')),
	value           INTEGER NOT NULL CHECK (value > 0),
	min_spend_cents INTEGER NOT NULL CHECK (min_spend_cents >= 0),
	stock           INTEGER NOT NULL CHECK (stock >= 1),
	limit_per_user  INTEGER NOT NULL CHECK (limit_per_user >= 1),
	grab_start_ms   INTEGER NOT NULL,
	grab_end_ms     INTEGER NOT NULL,
	valid_days      INTEGER NOT NULL CHECK (valid_days >= 1),
	created_ms      INTEGER NOT NULL
);

-- A grabbed coupon. The ID is decided by the grab script in Redis (template
-- and unit number), so the batch flush can apply a record twice harmlessly.
CREATE TABLE user_coupons (
	id             INTEGER PRIMARY KEY,
	coupon_id      INTEGER NOT NULL REFERENCES coupons (id),
	user_id        INTEGER NOT NULL REFERENCES users (id),
	status         TEXT NOT NULL DEFAULT 'unused' CHECK (status IN ('unused', 'used', 'expired')),
	grabbed_ms     INTEGER NOT NULL,
	valid_until_ms INTEGER NOT NULL
);

-- All of a user's reminders for one template in one 64-bit integer:
-- bit channel*12 + minutes/5 - 1. "My reminders" is a prefix scan of the key;
-- the fan-out pages through one template by the second index.
CREATE TABLE coupon_reminders (
	user_id       INTEGER NOT NULL REFERENCES users (id),
	template_id   INTEGER NOT NULL REFERENCES coupons (id),
	bits          INTEGER NOT NULL,
	grab_start_ms INTEGER NOT NULL,
	shop_id       INTEGER NOT NULL,
	updated_ms    INTEGER NOT NULL,
	PRIMARY KEY (user_id, template_id)
) WITHOUT ROWID;

-- One row per reminder sent or attempted: (template, start time, lead time,
-- channel, user) is delivered at most once however often a task runs.
CREATE TABLE reminder_deliveries (
	template_id    INTEGER NOT NULL,
	grab_start_ms  INTEGER NOT NULL,
	minutes_before INTEGER NOT NULL,
	channel        TEXT NOT NULL,
	user_id        INTEGER NOT NULL,
	status         TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'retrying', 'failed', 'skipped')),
	attempts       INTEGER NOT NULL DEFAULT 0,
	last_error     TEXT NOT NULL DEFAULT '',
	created_ms     INTEGER NOT NULL,
	sent_ms        INTEGER,
	PRIMARY KEY (template_id, grab_start_ms, minutes_before, channel, user_id)
) WITHOUT ROWID;

-- The in-app inbox.
CREATE TABLE notifications (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	user_id    INTEGER NOT NULL REFERENCES users (id),
	kind       TEXT NOT NULL,
	coupon_id  INTEGER,
	message    TEXT NOT NULL,
	created_ms INTEGER NOT NULL,
	read       INTEGER NOT NULL DEFAULT 0
);

-- julianday reads every form the old code wrote (and any RFC 3339 offset),
-- keeping whole milliseconds as time.UnixMilli does; ROUND undoes the
-- floating point of its answer. A text it cannot read is NULL and fails the
-- NOT NULL above: the migration stops rather than invent a time.
INSERT INTO coupons (id, shop_id, title, kind, value, min_spend_cents, stock, limit_per_user, grab_start_ms, grab_end_ms, valid_days, created_ms)
	SELECT id, shop_id, title, kind, value, min_spend_cents, stock, limit_per_user,
		CAST(ROUND((julianday(grab_start_at) - 2440587.5) * 86400000) AS INTEGER),
		CAST(ROUND((julianday(grab_end_at) - 2440587.5) * 86400000) AS INTEGER),
		valid_days,
		CAST(ROUND((julianday(created_at) - 2440587.5) * 86400000) AS INTEGER)
	FROM coupons_old;
INSERT INTO user_coupons (id, coupon_id, user_id, status, grabbed_ms, valid_until_ms)
	SELECT id, coupon_id, user_id, status,
		CAST(ROUND((julianday(grabbed_at) - 2440587.5) * 86400000) AS INTEGER),
		CAST(ROUND((julianday(valid_until) - 2440587.5) * 86400000) AS INTEGER)
	FROM user_coupons_old;
INSERT INTO coupon_reminders (user_id, template_id, bits, grab_start_ms, shop_id, updated_ms)
	SELECT user_id, template_id, bits,
		CAST(ROUND((julianday(grab_start_at) - 2440587.5) * 86400000) AS INTEGER),
		shop_id,
		CAST(ROUND((julianday(updated_at) - 2440587.5) * 86400000) AS INTEGER)
	FROM coupon_reminders_old;
INSERT INTO reminder_deliveries (template_id, grab_start_ms, minutes_before, channel, user_id, status, attempts, last_error, created_ms, sent_ms)
	SELECT template_id,
		CAST(ROUND((julianday(grab_start_at) - 2440587.5) * 86400000) AS INTEGER),
		minutes_before, channel, user_id, status, attempts, last_error,
		CAST(ROUND((julianday(created_at) - 2440587.5) * 86400000) AS INTEGER),
		CAST(ROUND((julianday(sent_at) - 2440587.5) * 86400000) AS INTEGER)
	FROM reminder_deliveries_old;
INSERT INTO notifications (id, user_id, kind, coupon_id, message, created_ms, read)
	SELECT id, user_id, kind, coupon_id, message,
		CAST(ROUND((julianday(created_at) - 2440587.5) * 86400000) AS INTEGER),
		read
	FROM notifications_old;

DELETE FROM sqlite_sequence WHERE name IN ('coupons', 'notifications');
INSERT INTO sqlite_sequence (name, seq)
	SELECT 'coupons', seq FROM sqlite_sequence WHERE name = 'coupons_old'
	UNION ALL SELECT 'notifications', seq FROM sqlite_sequence WHERE name = 'notifications_old';

DROP TABLE user_coupons_old;
DROP TABLE coupon_reminders_old;
DROP TABLE reminder_deliveries_old;
DROP TABLE notifications_old;
DROP TABLE coupons_old;

CREATE INDEX coupons_shop ON coupons (shop_id, id);
CREATE INDEX coupons_end ON coupons (grab_end_ms);
CREATE INDEX user_coupons_user ON user_coupons (user_id, id);
CREATE INDEX user_coupons_coupon ON user_coupons (coupon_id, user_id);
CREATE INDEX coupon_reminders_template ON coupon_reminders (template_id, user_id, bits);
CREATE INDEX notifications_user ON notifications (user_id, id);
CREATE INDEX notifications_unread ON notifications (user_id) WHERE read = 0;
