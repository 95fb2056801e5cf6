-- Seckill goods in time slots, and the orders grabbed from them.
-- Times are unix milliseconds (UTC), so windows compare as integers.
CREATE TABLE slots (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	merchant_id INTEGER NOT NULL REFERENCES users(id),
	title       TEXT NOT NULL,
	start_ms    INTEGER NOT NULL,
	end_ms      INTEGER NOT NULL CHECK (end_ms > start_ms),
	created_ms  INTEGER NOT NULL
);
CREATE INDEX slots_by_end ON slots (end_ms, start_ms);
CREATE INDEX slots_by_merchant ON slots (merchant_id, start_ms);

CREATE TABLE goods (
	id                  INTEGER PRIMARY KEY AUTOINCREMENT,
	slot_id             INTEGER NOT NULL REFERENCES slots(id),
	merchant_id         INTEGER NOT NULL REFERENCES users(id),
	title               TEXT NOT NULL,
	description         TEXT NOT NULL DEFAULT '',
	price_cents         INTEGER NOT NULL CHECK (price_cents >= 0),
	seckill_price_cents INTEGER NOT NULL CHECK (seckill_price_cents >= 0),
	stock               INTEGER NOT NULL CHECK (stock >= 1),
	limit_per_user      INTEGER NOT NULL CHECK (limit_per_user >= 1),
	remaining           INTEGER NOT NULL, -- brought in line with Redis by the stock sync
	synced_ms           INTEGER,
	preheated_ms        INTEGER,          -- first load into Redis
	created_ms          INTEGER NOT NULL
);
CREATE INDEX goods_by_slot ON goods (slot_id, id);

-- Orders arrive from Redis through the batch flush. version orders the state
-- changes of one order, so a replayed or late record never moves it back.
CREATE TABLE orders (
	id           INTEGER PRIMARY KEY, -- goods_id * 1e9 + per-goods sequence, assigned in Redis
	goods_id     INTEGER NOT NULL REFERENCES goods(id),
	user_id      INTEGER NOT NULL,
	unit         INTEGER NOT NULL,    -- the stock unit this order holds
	amount_cents INTEGER NOT NULL,
	status       TEXT NOT NULL CHECK (status IN ('unpaid', 'paid', 'expired', 'cancelled', 'failed')),
	created_ms   INTEGER NOT NULL,
	expires_ms   INTEGER NOT NULL,
	updated_ms   INTEGER NOT NULL,
	version      INTEGER NOT NULL
);
-- The durable unit guard: at most one live order per unit, so a Redis
-- restored from an old snapshot cannot sell a unit twice.
CREATE UNIQUE INDEX orders_live_unit ON orders (goods_id, unit) WHERE status IN ('unpaid', 'paid');
CREATE INDEX orders_by_user ON orders (user_id, id);
CREATE INDEX orders_by_goods ON orders (goods_id, status);

-- Orders the durable guard refused (or whose ID was already taken): the drift
-- between Redis and SQLite, shown in the reconciliation view. handled is set
-- once the Redis order has been voided (or was found not voidable).
CREATE TABLE order_conflicts (
	id           INTEGER PRIMARY KEY,
	goods_id     INTEGER NOT NULL,
	user_id      INTEGER NOT NULL,
	unit         INTEGER NOT NULL,
	amount_cents INTEGER NOT NULL,
	status       TEXT NOT NULL,
	created_ms   INTEGER NOT NULL,
	expires_ms   INTEGER NOT NULL,
	updated_ms   INTEGER NOT NULL,
	version      INTEGER NOT NULL,
	reason       TEXT NOT NULL,
	detected_ms  INTEGER NOT NULL,
	handled      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX order_conflicts_by_goods ON order_conflicts (goods_id);
