package goods

import (
	"context"
	"fmt"
	"strconv"

	"github.com/seckill/seckill/db/model"
)

// StatsDrift names the figures where Redis and SQLite disagree, and
// "conflicts" when the durable guard has refused orders.
func StatsDrift(st model.GoodsStats) []string {
	drift := []string{}
	for _, c := range []struct {
		name        string
		redis, sqlt int64
	}{
		{"remaining", st.Remaining, st.DB.Stock},
		{"unpaid", st.Unpaid, st.DB.Unpaid},
		{"paid", st.Paid, st.DB.Paid},
		{"expired", st.Expired, st.DB.Expired},
		{"cancelled", st.Cancelled, st.DB.Cancelled},
	} {
		if c.redis != c.sqlt {
			drift = append(drift, c.name)
		}
	}
	if st.DB.Conflicts > 0 {
		drift = append(drift, "conflicts")
	}
	return drift
}

// Stats returns the reconciliation of goods the caller manages.
func (s *Service) Stats(ctx context.Context, by model.Claims, id int64) (*model.GoodsStats, error) {
	g, err := s.Owned(ctx, by, id)
	if err != nil {
		return nil, err
	}
	st := &model.GoodsStats{Stock: g.Stock, Remaining: g.Remaining}
	pipe := s.Redis.Pipeline()
	loaded := pipe.Exists(ctx, infoKey(id))
	counts := pipe.HGetAll(ctx, countsKey(id))
	pending := pipe.LLen(ctx, flushQueue(id).Pending)
	processing := pipe.LLen(ctx, flushQueue(id).Processing)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("goods %d stats: %w", id, err)
	}
	st.Loaded = loaded.Val() == 1
	c := counts.Val()
	num := func(k string) int64 { n, _ := strconv.ParseInt(c[k], 10, 64); return n }
	st.Unpaid, st.Paid, st.Expired, st.Cancelled, st.Failed, st.RevenueCents =
		num(model.OrderUnpaid), num(model.OrderPaid), num(model.OrderExpired), num(model.OrderCancelled), num(model.OrderFailed), num("revenue")
	st.Pending = pending.Val() + processing.Val()

	rows, err := s.SQL.R.QueryContext(ctx, `SELECT status, COUNT(*), COALESCE(SUM(amount_cents), 0) FROM orders WHERE goods_id = ? GROUP BY status`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n, sum int64
		if err := rows.Scan(&status, &n, &sum); err != nil {
			return nil, err
		}
		switch status {
		case model.OrderUnpaid:
			st.DB.Unpaid = n
		case model.OrderPaid:
			st.DB.Paid, st.DB.RevenueCents = n, sum
		case model.OrderExpired:
			st.DB.Expired = n
		case model.OrderCancelled:
			st.DB.Cancelled = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := s.SQL.R.QueryRowContext(ctx, `SELECT (SELECT remaining FROM goods WHERE id = ?1), (SELECT COUNT(*) FROM order_conflicts WHERE goods_id = ?1)`, id).
		Scan(&st.DB.Stock, &st.DB.Conflicts); err != nil {
		return nil, err
	}
	st.Drift = StatsDrift(*st)
	return st, nil
}

// Conflicts lists the refused orders of goods the caller manages.
func (s *Service) Conflicts(ctx context.Context, by model.Claims, id int64) ([]model.OrderConflict, error) {
	if _, err := s.Owned(ctx, by, id); err != nil {
		return nil, err
	}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms,
		version, reason, detected_ms, handled FROM order_conflicts WHERE goods_id = ? ORDER BY id LIMIT 200`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []model.OrderConflict{}
	for rows.Next() {
		var c model.OrderConflict
		var created, expires, updated, detected int64
		if err := rows.Scan(&c.ID, &c.GoodsID, &c.UserID, &c.Unit, &c.AmountCents, &c.Status, &created, &expires, &updated,
			&c.Version, &c.Reason, &detected, &c.Handled); err != nil {
			return nil, err
		}
		c.CreatedAt, c.ExpiresAt, c.UpdatedAt, c.DetectedAt = msTime(created), msTime(expires), msTime(updated), msTime(detected)
		out = append(out, c)
	}
	return out, rows.Err()
}

// SlotSales returns a slot the caller manages with the figures of each of its goods.
func (s *Service) SlotSales(ctx context.Context, by model.Claims, slotID int64) (*model.Slot, []model.GoodsSales, error) {
	sl, err := s.ownedSlot(ctx, by, slotID)
	if err != nil {
		return nil, nil, err
	}
	gs, err := s.SlotGoods(ctx, slotID)
	if err != nil {
		return nil, nil, err
	}
	out := make([]model.GoodsSales, 0, len(gs))
	for _, g := range gs {
		st, err := s.Stats(ctx, by, g.ID)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, model.GoodsSales{Goods: g, Stats: *st})
	}
	return sl, out, nil
}
