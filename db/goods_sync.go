package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/model"
)

// SyncStock brings SQLite's remaining stock in line with Redis for the
// slot's goods (slotID 0: every active goods), and retires goods whose sale
// is over and settled, so the flush and sweep stop visiting them.
func (s *Store) SyncStock(ctx context.Context, slotID int64) error {
	var ids []int64
	var err error
	if slotID > 0 {
		gs, err := s.slotGoodsRows(ctx, slotID)
		if err != nil {
			return err
		}
		for _, g := range gs {
			ids = append(ids, g.ID)
		}
	} else if ids, err = s.activeGoods(ctx); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	type reading struct {
		fresh                     *redis.StringCmd
		free, pending, processing *redis.IntCmd
		unpaid, end               *redis.StringCmd
	}
	pipe := s.Redis.Pipeline()
	rs := make([]reading, len(ids))
	for i, id := range ids {
		q := goodsQueue(id)
		rs[i] = reading{
			fresh: pipe.Get(ctx, goodsFreshKey(id)), free: pipe.LLen(ctx, goodsFreeKey(id)),
			pending: pipe.LLen(ctx, q.Pending), processing: pipe.LLen(ctx, q.Processing),
			unpaid: pipe.HGet(ctx, goodsCountsKey(id), OrderUnpaid), end: pipe.HGet(ctx, goodsInfoKey(id), "end"),
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read stock: %w", err)
	}
	now := s.Now().UnixMilli()
	var done []any
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		for i, id := range ids {
			fresh, err := rs[i].fresh.Int64()
			if err != nil {
				continue // not in Redis: nothing to sync
			}
			if _, err := tx.ExecContext(ctx, `UPDATE goods SET remaining = ?, synced_ms = ? WHERE id = ?`, fresh+rs[i].free.Val(), now, id); err != nil {
				return err
			}
			end, _ := rs[i].end.Int64()
			unpaid, _ := rs[i].unpaid.Int64()
			if end > 0 && end <= now && unpaid == 0 && rs[i].pending.Val() == 0 && rs[i].processing.Val() == 0 {
				done = append(done, id) // no order can change any more and all are flushed
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sync stock: %w", err)
	}
	if len(done) > 0 {
		return s.Redis.SRem(ctx, activeGoodsKey, done...).Err()
	}
	return nil
}

// SweepOverdueOrders expires unpaid orders past their deadline on every
// active goods: it catches orders whose expiry task was never enqueued
// (a crash between the grab and the enqueue). It returns how many it expired.
func (s *Store) SweepOverdueOrders(ctx context.Context) (int, error) {
	ids, err := s.activeGoods(ctx)
	if err != nil {
		return 0, err
	}
	now := s.Now()
	n := 0
	for _, id := range ids {
		seqs, err := s.Redis.ZRangeByScore(ctx, goodsDeadlinesKey(id), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: 500,
		}).Result()
		if err != nil {
			return n, err
		}
		for _, sq := range seqs {
			seq, _ := strconv.ParseInt(sq, 10, 64)
			if err := s.expireOrder(ctx, OrderID(id, seq), now); err != nil && !errors.Is(err, ErrNotDue) {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// GoodsStats is the reconciliation of one goods: live counts from Redis
// beside the durable counts in SQLite. At rest remaining+unpaid+paid == stock
// and the two sides agree; Drift names what differs.
type GoodsStats struct {
	Stock        int64        `json:"stock"`
	Remaining    int64        `json:"remaining"`
	Unpaid       int64        `json:"unpaid"`
	Paid         int64        `json:"paid"`
	Expired      int64        `json:"expired"`
	Cancelled    int64        `json:"cancelled"`
	Failed       int64        `json:"failed"`
	RevenueCents int64        `json:"revenue_cents"`
	Pending      int64        `json:"pending"` // order changes waiting for the flush
	Loaded       bool         `json:"loaded"`  // whether the goods is in Redis yet
	DB           GoodsDBStats `json:"db"`
	Drift        []string     `json:"drift"`
}

// GoodsDBStats are the durable counts of one goods in SQLite. Stock is the
// remaining stock as last synced; Conflicts counts orders the durable unit
// guard refused.
type GoodsDBStats struct {
	Unpaid       int64 `json:"unpaid"`
	Paid         int64 `json:"paid"`
	Expired      int64 `json:"expired"`
	Cancelled    int64 `json:"cancelled"`
	Stock        int64 `json:"stock"`
	RevenueCents int64 `json:"revenue_cents"`
	Conflicts    int64 `json:"conflicts"`
}

// StatsDrift names the figures where Redis and SQLite disagree, and
// "conflicts" when the durable guard has refused orders.
func StatsDrift(st GoodsStats) []string {
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

// GoodsStats returns the reconciliation of goods the caller manages.
func (s *Store) GoodsStats(ctx context.Context, by model.Claims, id int64) (*GoodsStats, error) {
	g, err := s.OwnedGoods(ctx, by, id)
	if err != nil {
		return nil, err
	}
	st := &GoodsStats{Stock: g.Stock, Remaining: g.Remaining}
	pipe := s.Redis.Pipeline()
	loaded := pipe.Exists(ctx, goodsInfoKey(id))
	counts := pipe.HGetAll(ctx, goodsCountsKey(id))
	pending := pipe.LLen(ctx, goodsQueue(id).Pending)
	processing := pipe.LLen(ctx, goodsQueue(id).Processing)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("goods %d stats: %w", id, err)
	}
	st.Loaded = loaded.Val() == 1
	c := counts.Val()
	num := func(k string) int64 { n, _ := strconv.ParseInt(c[k], 10, 64); return n }
	st.Unpaid, st.Paid, st.Expired, st.Cancelled, st.Failed, st.RevenueCents =
		num(OrderUnpaid), num(OrderPaid), num(OrderExpired), num(OrderCancelled), num(OrderFailed), num("revenue")
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
		case OrderUnpaid:
			st.DB.Unpaid = n
		case OrderPaid:
			st.DB.Paid, st.DB.RevenueCents = n, sum
		case OrderExpired:
			st.DB.Expired = n
		case OrderCancelled:
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

// OrderConflict is an order from Redis that SQLite refused.
type OrderConflict struct {
	Order
	Reason     string    `json:"reason"`
	DetectedAt time.Time `json:"detected_at"`
	Handled    bool      `json:"handled"`
}

// GoodsConflicts lists the refused orders of goods the caller manages.
func (s *Store) GoodsConflicts(ctx context.Context, by model.Claims, id int64) ([]OrderConflict, error) {
	if _, err := s.OwnedGoods(ctx, by, id); err != nil {
		return nil, err
	}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms,
		version, reason, detected_ms, handled FROM order_conflicts WHERE goods_id = ? ORDER BY id LIMIT 200`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []OrderConflict{}
	for rows.Next() {
		var c OrderConflict
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

// GoodsSales is one goods with its live and durable figures, for the sales dashboard.
type GoodsSales struct {
	Goods
	Stats GoodsStats
}

// SlotSales returns a slot the caller manages with the figures of each of its goods.
func (s *Store) SlotSales(ctx context.Context, by model.Claims, slotID int64) (*Slot, []GoodsSales, error) {
	sl, err := s.ownedSlot(ctx, by, slotID)
	if err != nil {
		return nil, nil, err
	}
	gs, err := s.SlotGoods(ctx, slotID)
	if err != nil {
		return nil, nil, err
	}
	out := make([]GoodsSales, 0, len(gs))
	for _, g := range gs {
		st, err := s.GoodsStats(ctx, by, g.ID)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, GoodsSales{Goods: g, Stats: *st})
	}
	return sl, out, nil
}
