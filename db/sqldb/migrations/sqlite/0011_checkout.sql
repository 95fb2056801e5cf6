-- Checkout: an order is paid with an optional coupon (discount_cents off
-- amount_cents leaves paid_cents), when (paid_at_ms), and may be refunded
-- (status 'refunded', refunded_ms). A used coupon names its order.
--
-- SQLite cannot change a CHECK in place, so orders is rebuilt to allow
-- 'refunded' (no table refers to orders); its indexes are made again.
ALTER TABLE orders RENAME TO orders_old;
CREATE TABLE orders (
	id             INTEGER PRIMARY KEY, -- goods_id * 1e9 + per-goods sequence, assigned in Redis
	goods_id       INTEGER NOT NULL REFERENCES goods(id),
	user_id        INTEGER NOT NULL,
	unit           INTEGER NOT NULL,    -- the stock unit this order holds
	amount_cents   INTEGER NOT NULL,
	status         TEXT NOT NULL CHECK (status IN ('unpaid', 'paid', 'expired', 'cancelled', 'failed', 'refunded')),
	created_ms     INTEGER NOT NULL,
	expires_ms     INTEGER NOT NULL,
	updated_ms     INTEGER NOT NULL,
	version        INTEGER NOT NULL,
	failure        TEXT NOT NULL DEFAULT '',
	discount_cents INTEGER NOT NULL DEFAULT 0,
	paid_cents     INTEGER NOT NULL DEFAULT 0,
	user_coupon_id INTEGER NOT NULL DEFAULT 0, -- 0: paid without a coupon
	paid_at_ms     INTEGER NOT NULL DEFAULT 0, -- 0: never paid
	refunded_ms    INTEGER NOT NULL DEFAULT 0  -- 0: not refunded
);
INSERT INTO orders (id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms, version, failure, paid_cents, paid_at_ms)
	SELECT id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms, version, failure,
		CASE WHEN status = 'paid' OR failure = 'refund_due' THEN amount_cents ELSE 0 END,
		CASE WHEN status = 'paid' OR failure = 'refund_due' THEN updated_ms ELSE 0 END
	FROM orders_old;
DROP TABLE orders_old;
CREATE UNIQUE INDEX orders_live_unit ON orders (goods_id, unit) WHERE status IN ('unpaid', 'paid');
CREATE INDEX orders_by_user ON orders (user_id, id);
CREATE INDEX orders_by_goods ON orders (goods_id, status);

ALTER TABLE order_conflicts ADD COLUMN discount_cents INTEGER NOT NULL DEFAULT 0;
ALTER TABLE order_conflicts ADD COLUMN paid_cents INTEGER NOT NULL DEFAULT 0;
ALTER TABLE order_conflicts ADD COLUMN user_coupon_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE order_conflicts ADD COLUMN paid_at_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE order_conflicts ADD COLUMN refunded_ms INTEGER NOT NULL DEFAULT 0;

-- A used coupon names the order it paid for (0: none) and when.
ALTER TABLE user_coupons ADD COLUMN order_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE user_coupons ADD COLUMN used_ms INTEGER NOT NULL DEFAULT 0;
-- The periodic expiry walks unused coupons by validity; the sweep walks used ones.
CREATE INDEX user_coupons_unused_until ON user_coupons (valid_until_ms) WHERE status = 'unused';
CREATE INDEX user_coupons_used ON user_coupons (id, order_id) WHERE status = 'used';

-- Payment gateway callbacks, one row per gateway_ref: a replay finds its
-- row and changes nothing. outcome is 'pending' until the task decides
-- 'paid' or 'refunded' (reason: expired, cancelled, already_paid, amount, not_found).
CREATE TABLE payments (
	gateway_ref TEXT PRIMARY KEY,
	order_id    INTEGER NOT NULL,
	paid_cents  INTEGER NOT NULL,
	outcome     TEXT NOT NULL DEFAULT 'pending',
	reason      TEXT NOT NULL DEFAULT '',
	created_ms  INTEGER NOT NULL,
	decided_ms  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX payments_by_order ON payments (order_id);
