-- The steering switches of a running sale (GET/PUT /api/admin/switches):
-- one row, read by every process every few hundred milliseconds; version
-- counts the changes, so a change made from what was read says so in its
-- WHERE. Booleans are 0 or 1.
CREATE TABLE steering_switches (
	id                 INTEGER PRIMARY KEY CHECK (id = 1),
	sale_paused        INTEGER NOT NULL DEFAULT 0,
	live_charts        INTEGER NOT NULL DEFAULT 1,
	stock_push_ms      INTEGER NOT NULL DEFAULT 100,
	pow_floor_bits     INTEGER NOT NULL DEFAULT 0,
	reminders_paused   INTEGER NOT NULL DEFAULT 0,
	merchant_read_only INTEGER NOT NULL DEFAULT 0,
	version            BIGINT NOT NULL DEFAULT 0,
	updated_ms         BIGINT NOT NULL DEFAULT 0
);
INSERT INTO steering_switches (id) VALUES (1);
