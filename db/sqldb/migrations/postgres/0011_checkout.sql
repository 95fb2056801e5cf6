-- Checkout: an order is paid with an optional coupon (discount_cents off
-- amount_cents leaves paid_cents), when (paid_at_ms), and may be refunded
-- (status 'refunded', refunded_ms). A used coupon names its order.
-- (SQLite's 0011_checkout.sql rebuilds orders for the new CHECK.)
ALTER TABLE orders DROP CONSTRAINT IF EXISTS orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check
	CHECK (status IN ('unpaid', 'paid', 'expired', 'cancelled', 'failed', 'refunded'));
ALTER TABLE orders ADD COLUMN discount_cents BIGINT NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN paid_cents BIGINT NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN user_coupon_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN paid_at_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN refunded_ms BIGINT NOT NULL DEFAULT 0;
UPDATE orders SET paid_cents = amount_cents, paid_at_ms = updated_ms WHERE status = 'paid' OR failure = 'refund_due';

ALTER TABLE order_conflicts ADD COLUMN discount_cents BIGINT NOT NULL DEFAULT 0;
ALTER TABLE order_conflicts ADD COLUMN paid_cents BIGINT NOT NULL DEFAULT 0;
ALTER TABLE order_conflicts ADD COLUMN user_coupon_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE order_conflicts ADD COLUMN paid_at_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE order_conflicts ADD COLUMN refunded_ms BIGINT NOT NULL DEFAULT 0;

-- A used coupon names the order it paid for (0: none) and when.
ALTER TABLE user_coupons ADD COLUMN order_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE user_coupons ADD COLUMN used_ms BIGINT NOT NULL DEFAULT 0;
-- The periodic expiry walks unused coupons by validity; the sweep walks used ones.
CREATE INDEX user_coupons_unused_until ON user_coupons (valid_until_ms) WHERE status = 'unused';
CREATE INDEX user_coupons_used ON user_coupons (id, order_id) WHERE status = 'used';

-- Payment gateway callbacks, one row per gateway_ref: a replay finds its
-- row and changes nothing. outcome is 'pending' until the task decides
-- 'paid' or 'refunded' (reason: expired, cancelled, already_paid, amount, not_found).
CREATE TABLE payments (
	gateway_ref TEXT PRIMARY KEY,
	order_id    BIGINT NOT NULL,
	paid_cents  BIGINT NOT NULL,
	outcome     TEXT NOT NULL DEFAULT 'pending',
	reason      TEXT NOT NULL DEFAULT '',
	created_ms  BIGINT NOT NULL,
	decided_ms  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX payments_by_order ON payments (order_id);
