-- Coupon templates, grabbed coupons, reminder bookings (one bitmap per user
-- and template), recorded reminder deliveries and the in-app inbox.
CREATE TABLE coupons (
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	shop_id         INTEGER NOT NULL REFERENCES users (id),
	title           TEXT NOT NULL,
	kind            TEXT NOT NULL CHECK (kind IN ('amount_off', 'percent_off')),
	value           INTEGER NOT NULL CHECK (value > 0),
	min_spend_cents INTEGER NOT NULL CHECK (min_spend_cents >= 0),
	stock           INTEGER NOT NULL CHECK (stock >= 1),
	limit_per_user  INTEGER NOT NULL CHECK (limit_per_user >= 1),
	grab_start_at   TEXT NOT NULL,
	grab_end_at     TEXT NOT NULL,
	valid_days      INTEGER NOT NULL CHECK (valid_days >= 1),
	created_at      TEXT NOT NULL
);
CREATE INDEX coupons_shop ON coupons (shop_id, id);
CREATE INDEX coupons_end ON coupons (grab_end_at);

-- A grabbed coupon. The ID is decided by the grab script in Redis (template
-- and unit number), so the batch flush can apply a record twice harmlessly.
CREATE TABLE user_coupons (
	id          INTEGER PRIMARY KEY,
	coupon_id   INTEGER NOT NULL REFERENCES coupons (id),
	user_id     INTEGER NOT NULL REFERENCES users (id),
	status      TEXT NOT NULL DEFAULT 'unused' CHECK (status IN ('unused', 'used', 'expired')),
	grabbed_at  TEXT NOT NULL,
	valid_until TEXT NOT NULL
);
CREATE INDEX user_coupons_user ON user_coupons (user_id, id);
CREATE INDEX user_coupons_coupon ON user_coupons (coupon_id, user_id);

-- All of a user's reminders for one template in one 64-bit integer:
-- bit channel*12 + minutes/5 - 1. "My reminders" is a prefix scan of the key;
-- the fan-out pages through one template by the second index.
CREATE TABLE coupon_reminders (
	user_id       INTEGER NOT NULL REFERENCES users (id),
	template_id   INTEGER NOT NULL REFERENCES coupons (id),
	bits          INTEGER NOT NULL,
	grab_start_at TEXT NOT NULL,
	shop_id       INTEGER NOT NULL,
	updated_at    TEXT NOT NULL,
	PRIMARY KEY (user_id, template_id)
) WITHOUT ROWID;
CREATE INDEX coupon_reminders_template ON coupon_reminders (template_id, user_id, bits);

-- One row per reminder sent or attempted: (template, start time, lead time,
-- channel, user) is delivered at most once however often a task runs.
CREATE TABLE reminder_deliveries (
	template_id    INTEGER NOT NULL,
	grab_start_at  TEXT NOT NULL,
	minutes_before INTEGER NOT NULL,
	channel        TEXT NOT NULL,
	user_id        INTEGER NOT NULL,
	status         TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'retrying', 'failed', 'skipped')),
	attempts       INTEGER NOT NULL DEFAULT 0,
	last_error     TEXT NOT NULL DEFAULT '',
	created_at     TEXT NOT NULL,
	sent_at        TEXT,
	PRIMARY KEY (template_id, grab_start_at, minutes_before, channel, user_id)
) WITHOUT ROWID;

-- The in-app inbox.
CREATE TABLE notifications (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	user_id    INTEGER NOT NULL REFERENCES users (id),
	kind       TEXT NOT NULL,
	coupon_id  INTEGER,
	message    TEXT NOT NULL,
	created_at TEXT NOT NULL,
	read       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX notifications_user ON notifications (user_id, id);
CREATE INDEX notifications_unread ON notifications (user_id) WHERE read = 0;
