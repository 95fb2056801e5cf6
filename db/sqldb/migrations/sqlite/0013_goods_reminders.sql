-- "Remind me" for seckill goods, on the booking machinery of coupon
-- reminders (db/remind): one row per (user, goods) whose bits are the booked
-- (lead time, channel) pairs, bit channel*12 + minutes/5 - 1, with the start
-- of the goods' slot the reminders count down to (moved with the slot).
CREATE TABLE goods_reminders (
	user_id    INTEGER NOT NULL REFERENCES users (id),
	goods_id   INTEGER NOT NULL REFERENCES goods (id),
	bits       INTEGER NOT NULL,
	start_ms   INTEGER NOT NULL,
	updated_ms INTEGER NOT NULL,
	PRIMARY KEY (user_id, goods_id)
);
CREATE INDEX goods_reminders_goods ON goods_reminders (goods_id, user_id, bits);
-- The periodic check that every fan-out task exists looks up the bookings
-- of goods starting within the hour.
CREATE INDEX goods_reminders_start ON goods_reminders (start_ms);

-- One row per goods reminder sent or attempted: a task run again finds it
-- and sends nothing twice.
CREATE TABLE goods_reminder_deliveries (
	goods_id       INTEGER NOT NULL,
	start_ms       INTEGER NOT NULL,
	minutes_before INTEGER NOT NULL,
	channel        TEXT NOT NULL,
	user_id        INTEGER NOT NULL,
	status         TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'retrying', 'failed', 'skipped')),
	attempts       INTEGER NOT NULL DEFAULT 0,
	last_error     TEXT NOT NULL DEFAULT '',
	created_ms     INTEGER NOT NULL,
	sent_ms        INTEGER,
	lease_until_ms INTEGER,
	PRIMARY KEY (goods_id, start_ms, minutes_before, channel, user_id)
);

-- A goods reminder in the inbox links to its goods.
ALTER TABLE notifications ADD COLUMN goods_id INTEGER;
