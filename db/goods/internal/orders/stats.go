package orders

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// StatsDrift names the figures (counts and revenue) where Redis and the store
// disagree, and "conflicts" when the durable guard has refused orders.
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
		{"failed", st.Failed, st.DB.Failed},
		{"revenue", st.RevenueCents, st.DB.RevenueCents},
		{"discount", st.DiscountCents, st.DB.DiscountCents},
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
func (s *Ledger) Stats(ctx context.Context, by model.Claims, id int64) (*model.GoodsStats, error) {
	g, err := s.Owned(ctx, by, id)
	if err != nil {
		return nil, err
	}
	st := &model.GoodsStats{Stock: g.Stock, Remaining: g.Remaining}
	bs, err := s.BucketsOfGoods(ctx, id)
	if err != nil {
		return nil, err
	}
	pipe := s.Redis.Pipeline()
	loaded := pipe.Exists(ctx, sale.InfoKey(sale.Bucket0(id)))
	counts := make([]*redis.MapStringStringCmd, len(bs))
	pending := make([]*redis.IntCmd, 2*len(bs))
	oldest := make([]*redis.StringCmd, 2*len(bs)) // each queue's first record: the oldest change it holds
	for i, b := range bs {                        // the sums over the buckets
		counts[i] = pipe.HGetAll(ctx, sale.CountsKey(b))
		pending[2*i] = pipe.LLen(ctx, sale.FlushQueue(b).Pending)
		pending[2*i+1] = pipe.LLen(ctx, sale.FlushQueue(b).Processing)
		oldest[2*i] = pipe.LIndex(ctx, sale.FlushQueue(b).Pending, 0)
		oldest[2*i+1] = pipe.LIndex(ctx, sale.FlushQueue(b).Processing, 0)
	}
	cmds, _ := pipe.Exec(ctx)
	for _, c := range cmds { // an empty queue's head is redis.Nil
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("goods %d stats: %w", id, err)
		}
	}
	st.Loaded = loaded.Val() == 1
	num := func(k string) (sum int64) {
		for _, c := range counts {
			n, _ := strconv.ParseInt(c.Val()[k], 10, 64)
			sum += n
		}
		return sum
	}
	st.Unpaid, st.Paid, st.Expired, st.Cancelled, st.Failed, st.RevenueCents =
		num(model.OrderUnpaid), num(model.OrderPaid), num(model.OrderExpired), num(model.OrderCancelled), num(model.OrderFailed), num("revenue")
	st.DiscountCents = num("discount")
	st.NetCents = st.RevenueCents - st.DiscountCents
	for _, p := range pending {
		st.Pending += p.Val()
	}
	st.DurableLagMS = durableLag(id, oldest, s.Now())

	if st.DB, err = s.durableCounts(ctx, id); err != nil {
		return nil, err
	}
	if err := s.SQL.R.QueryRowContext(ctx, `SELECT (SELECT remaining FROM goods WHERE id = ?1), (SELECT COUNT(*) FROM order_conflicts WHERE goods_id = ?1)`, id).
		Scan(&st.DB.Stock, &st.DB.Conflicts); err != nil {
		return nil, err
	}
	st.Drift = StatsDrift(*st)
	return st, nil
}

// durableLag is how far the store trails Redis: the age of the oldest change
// at the head of a flush queue (heads: the queues' first records, empty when
// a queue is), 0 when none waits.
func durableLag(goodsID int64, heads []*redis.StringCmd, now time.Time) int64 {
	lag := int64(0)
	for _, h := range heads {
		if h.Val() == "" {
			continue
		}
		if o, err := sale.ParseOrderRecord(goodsID, h.Val()); err == nil {
			lag = max(lag, now.Sub(o.UpdatedAt).Milliseconds())
		}
	}
	return lag
}

// durableCounts counts the goods' orders in the store as Redis counts them:
// each order Redis sent is in the store once, in orders or, refused, in
// order_conflicts. Only orders hold units and take payments (unpaid, paid,
// revenue); an ended order counts wherever it is (expired, cancelled,
// failed). Stock and Conflicts are left to the caller.
func (s *Ledger) durableCounts(ctx context.Context, goodsID int64) (model.GoodsDBStats, error) {
	return s.DurableCountsOf(ctx, goodsID, sale.OrderID(goodsID, 0), sale.OrderID(goodsID, sale.OrderSeqSpan-1))
}

// Conflicts lists the refused orders of goods the caller manages.
func (s *Ledger) Conflicts(ctx context.Context, by model.Claims, id int64) ([]model.OrderConflict, error) {
	if _, err := s.Owned(ctx, by, id); err != nil {
		return nil, err
	}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+orderTableColumns+`, reason, detected_ms, handled
		FROM order_conflicts WHERE goods_id = ? ORDER BY id LIMIT 200`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []model.OrderConflict{}
	for rows.Next() {
		var c model.OrderConflict
		var created, expires, updated, detected, paidCents, paidAt, refundedAt int64
		if err := rows.Scan(&c.ID, &c.GoodsID, &c.UserID, &c.Unit, &c.AmountCents, &c.Status, &created, &expires, &updated,
			&c.Version, &c.Failure, &c.DiscountCents, &paidCents, &c.UserCouponID, &paidAt, &refundedAt, &c.Reason, &detected, &c.Handled); err != nil {
			return nil, err
		}
		c.CreatedAt, c.ExpiresAt, c.UpdatedAt, c.DetectedAt = sale.MsTime(created), sale.MsTime(expires), sale.MsTime(updated), sale.MsTime(detected)
		sale.FillPaid(&c.Order, paidAt, refundedAt)
		out = append(out, c)
	}
	return out, rows.Err()
}

// SlotSales returns a slot the caller manages with the figures of each of its goods.
func (s *Ledger) SlotSales(ctx context.Context, by model.Claims, slotID int64) (*model.Slot, []model.GoodsSales, error) {
	sl, err := s.OwnedSlot(ctx, by, slotID)
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
