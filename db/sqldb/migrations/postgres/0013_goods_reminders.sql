-- SQLite's 0011_goods_reminders.sql has the same tables, columns and indexes.
-- "Remind me" for seckill goods, on the booking machinery of coupon
-- reminders (db/remind): one row per (user, goods) whose bits are the booked
-- (lead time, channel) pairs, bit channel*12 + minutes/5 - 1, with the start
-- of the goods' slot the reminders count down to (moved with the slot).
CREATE TABLE goods_reminders (
	user_id    BIGINT NOT NULL REFERENCES users (id),
	goods_id   BIGINT NOT NULL REFERENCES goods (id),
	bits       BIGINT NOT NULL,
	start_ms   BIGINT NOT NULL,
	updated_ms BIGINT NOT NULL,
	PRIMARY KEY (user_id, goods_id)
);
CREATE INDEX goods_reminders_goods ON goods_reminders (goods_id, user_id, bits);
-- The periodic check that every fan-out task exists looks up the bookings
-- of goods starting within the hour.
CREATE INDEX goods_reminders_start ON goods_reminders (start_ms);

-- One row per goods reminder sent or attempted: a task run again finds it
-- and sends nothing twice.
CREATE TABLE goods_reminder_deliveries (
	goods_id       BIGINT NOT NULL,
	start_ms       BIGINT NOT NULL,
	minutes_before BIGINT NOT NULL,
	channel        TEXT NOT NULL,
	user_id        BIGINT NOT NULL,
	status         TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'retrying', 'failed', 'skipped')),
	attempts       BIGINT NOT NULL DEFAULT 0,
	last_error     TEXT NOT NULL DEFAULT '',
	created_ms     BIGINT NOT NULL,
	sent_ms        BIGINT,
	lease_until_ms BIGINT,
	PRIMARY KEY (goods_id, start_ms, minutes_before, channel, user_id)
);

-- A goods reminder in the inbox links to its goods.
ALTER TABLE notifications ADD COLUMN goods_id BIGINT;
