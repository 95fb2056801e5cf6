-- Trades opened at the payment provider (Stripe), one per order: the
-- checkout answers the same one again. ref is the Checkout Session's ID
-- ('' until the provider answered). state: opening (asked, no answer yet),
-- open, paid (the order took the money), closed (closed unpaid at the
-- provider, the order released), refunded (the money went back unapplied:
-- reason says why). The expiry closes the open ones due at deadline_ms.
CREATE TABLE provider_trades (
	order_id       BIGINT PRIMARY KEY,
	user_id        BIGINT NOT NULL,
	ref            TEXT NOT NULL DEFAULT '',
	method         TEXT NOT NULL,
	amount_cents   BIGINT NOT NULL,
	discount_cents BIGINT NOT NULL DEFAULT 0,
	user_coupon_id BIGINT NOT NULL DEFAULT 0,
	currency       TEXT NOT NULL,
	url            TEXT NOT NULL DEFAULT '',
	qr_code        TEXT NOT NULL DEFAULT '',
	deadline_ms    BIGINT NOT NULL,
	expires_ms     BIGINT NOT NULL DEFAULT 0,
	state          TEXT NOT NULL DEFAULT 'opening',
	reason         TEXT NOT NULL DEFAULT '',
	payment_intent TEXT NOT NULL DEFAULT '',
	created_ms     BIGINT NOT NULL,
	updated_ms     BIGINT NOT NULL
);
CREATE INDEX provider_trades_due ON provider_trades (deadline_ms) WHERE state IN ('opening', 'open');
CREATE INDEX provider_trades_ref ON provider_trades (ref);
CREATE INDEX provider_trades_updated ON provider_trades (updated_ms);

-- Refunds asked of the provider, at most one per trade (its ref): asked
-- again under the same idempotency key until the provider answers.
-- reason: shopper, merchant (the order's refund), expired, cancelled,
-- already_paid, amount, not_found (money that found no order to pay).
-- status: asked, then the provider's (pending, succeeded, failed, ...).
CREATE TABLE provider_refunds (
	ref            TEXT PRIMARY KEY,
	order_id       BIGINT NOT NULL,
	payment_intent TEXT NOT NULL,
	amount_cents   BIGINT NOT NULL,
	reason         TEXT NOT NULL,
	refund_id      TEXT NOT NULL DEFAULT '',
	status         TEXT NOT NULL DEFAULT 'asked',
	created_ms     BIGINT NOT NULL,
	updated_ms     BIGINT NOT NULL
);
CREATE INDEX provider_refunds_by_order ON provider_refunds (order_id);
CREATE INDEX provider_refunds_asked ON provider_refunds (status) WHERE status = 'asked';
