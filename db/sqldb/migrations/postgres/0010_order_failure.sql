-- Why an order failed, for its owner: 'sold_twice' (the durable unit guard
-- found its unit sold to an earlier order while it was unpaid: nothing was
-- charged) or 'refund_due' (it had been paid: the payment is owed back).
-- Empty for every other order. (SQLite's 0010_order_failure.sql is the same.)
ALTER TABLE orders ADD COLUMN failure TEXT NOT NULL DEFAULT '';
ALTER TABLE order_conflicts ADD COLUMN failure TEXT NOT NULL DEFAULT '';

-- A user's refused orders are read beside their orders (My orders, one order).
CREATE INDEX order_conflicts_by_user ON order_conflicts (user_id, id);

-- Until now a refused order that was already paid was marked handled and
-- left paid: reopen those, so the flush fails them and tells their owners.
UPDATE order_conflicts SET handled = 0 WHERE handled = 1 AND status = 'paid';
