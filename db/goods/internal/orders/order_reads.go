package orders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// OrderOf returns any user's order, from Redis while its goods is active,
// else from the store: for the checkout's sweep and the payment gateway.
func (s *Ledger) OrderOf(ctx context.Context, orderID int64) (*model.Order, error) {
	b, seq, err := s.bucketOfOrder(ctx, orderID)
	if err != nil {
		return nil, err
	}
	rec, err := s.Redis.HGet(ctx, sale.OrdersKey(b), strconv.FormatInt(seq, 10)).Result()
	switch {
	case err == nil:
		return sale.ParseOrderRecord(b.Goods, rec)
	case errors.Is(err, redis.Nil):
		return s.sqlOrder(ctx, 0, orderID)
	default:
		return nil, fmt.Errorf("order %d: %w", orderID, err)
	}
}

// Order returns one of the user's orders; other users' orders are not found.
func (s *Ledger) Order(ctx context.Context, userID, orderID int64) (*model.Order, error) {
	o, err := s.OrderOf(ctx, orderID)
	if db.ErrorCode(err) == db.ENOTFOUND || (err == nil && o.UserID != userID) {
		return nil, db.Errorf(db.ENOTFOUND, "order %d not found", orderID)
	}
	return o, err
}

// orderTableColumns are the columns orders and order_conflicts share, for
// reading both as one.
const orderTableColumns = `id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms, version, failure,
	discount_cents, paid_cents, user_coupon_id, paid_at_ms, refunded_ms`

const orderColumns = `o.id, o.goods_id, o.user_id, o.unit, o.amount_cents, o.status, o.created_ms, o.expires_ms, o.updated_ms, o.version, o.failure,
	o.discount_cents, o.paid_cents, o.user_coupon_id, o.paid_at_ms, o.refunded_ms, COALESCE(g.title, '')`

func scanOrder(row interface{ Scan(...any) error }) (*model.Order, error) {
	var o model.Order
	var created, expires, updated, paidCents, paidAt, refundedAt int64
	if err := row.Scan(&o.ID, &o.GoodsID, &o.UserID, &o.Unit, &o.AmountCents, &o.Status, &created, &expires, &updated, &o.Version,
		&o.Failure, &o.DiscountCents, &paidCents, &o.UserCouponID, &paidAt, &refundedAt, &o.GoodsTitle); err != nil {
		return nil, err
	}
	o.CreatedAt, o.ExpiresAt, o.UpdatedAt = sale.MsTime(created), sale.MsTime(expires), sale.MsTime(updated)
	sale.FillPaid(&o, paidAt, refundedAt)
	return &o, nil
}

// sqlOrder returns the order the store holds under id, from orders or else from
// the refused orders (a failed duplicate lives there); userID, unless 0,
// must own it.
func (s *Ledger) sqlOrder(ctx context.Context, userID, id int64) (*model.Order, error) {
	for _, table := range []string{"orders", "order_conflicts"} {
		o, err := scanOrder(s.SQL.R.QueryRowContext(ctx, `SELECT `+orderColumns+` FROM `+table+` o LEFT JOIN goods g ON g.id = o.goods_id
			WHERE o.id = ?1 AND (?2 = 0 OR o.user_id = ?2)`, id, userID))
		if !errors.Is(err, sql.ErrNoRows) {
			return o, err
		}
	}
	return nil, db.Errorf(db.ENOTFOUND, "order %d not found", id)
}

// MyOrders lists the user's orders, newest first: Redis's live state and
// the store's durable record (refused orders too: a failed duplicate shows
// with its reason), so an order not flushed yet shows too.
//
// Redis is read first: the flush commits an order's record to the store
// before it drops the order from its user's list in Redis, so an order
// read from neither in this order does not exist, and one that ended
// while the list was read is in the store by the time the store is read.
// Of two records of one order the newer (its version) is shown: neither
// read moves an order back.
func (s *Ledger) MyOrders(ctx context.Context, userID int64) ([]model.Order, error) {
	live, err := s.liveOrdersOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	if s.betweenReads != nil {
		s.betweenReads()
	}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+orderColumns+` FROM (
			SELECT `+orderTableColumns+`, 0 AS refused FROM orders WHERE user_id = ?1
			UNION ALL SELECT `+orderTableColumns+`, 1 FROM order_conflicts WHERE user_id = ?1
		) o LEFT JOIN goods g ON g.id = o.goods_id ORDER BY o.id DESC, o.refused LIMIT 200`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := map[int64]*model.Order{}
	titles := map[int64]string{}
	for rows.Next() {
		o, err := scanOrder(rows)
		if err != nil {
			return nil, err
		}
		if _, ok := byID[o.ID]; !ok { // an ID two orders share (a restore): the one the store kept first
			byID[o.ID] = o
		}
		titles[o.GoodsID] = o.GoodsTitle
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, o := range live {
		old, ok := byID[o.ID]
		if ok && oneOrder(old, o) && old.Version > o.Version {
			continue // the store's is newer: the order moved on (and was flushed) after Redis was read
		}
		if ok {
			o.GoodsTitle = old.GoodsTitle
		} else if t, ok := titles[o.GoodsID]; ok {
			o.GoodsTitle = t
		} else if g, err := s.GoodsRow(ctx, o.GoodsID); err == nil {
			o.GoodsTitle, titles[o.GoodsID] = g.Title, g.Title
		}
		byID[o.ID] = o
	}
	out := make([]model.Order, 0, len(byID))
	for _, o := range byID {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// oneOrder reports whether two records of one ID are of one order (not two
// orders a restore numbered alike): the same shopper, unit and grab time.
func oneOrder(a, b *model.Order) bool {
	return a.UserID == b.UserID && a.Unit == b.Unit && a.CreatedAt.Equal(b.CreatedAt)
}

// liveOrdersOf reads the user's orders on every active goods from Redis in two round trips.
func (s *Ledger) liveOrdersOf(ctx context.Context, userID int64) ([]*model.Order, error) {
	active, err := s.ActiveGoods(ctx)
	if err != nil || len(active) == 0 {
		return nil, err
	}
	shards, err := s.ShardsOf(ctx, true, active...)
	if err != nil {
		return nil, err
	}
	// All of a user's orders of a goods are in the user's home bucket.
	home := make([]sale.Bucket, len(active))
	for i, g := range active {
		home[i] = sale.Bucket{Goods: g, N: sale.HomeBucket(userID, shards[g]), K: shards[g]}
	}
	uid := strconv.FormatInt(userID, 10)
	pipe := s.Redis.Pipeline()
	mine := make([]*redis.StringCmd, len(active))
	for i := range active {
		mine[i] = pipe.HGet(ctx, sale.MineKey(home[i]), uid)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	pipe = s.Redis.Pipeline()
	type ref struct {
		goods int64
		cmd   *redis.SliceCmd
	}
	var refs []ref
	for i, g := range active {
		seqs := strings.Split(mine[i].Val(), ",")
		if mine[i].Val() == "" {
			continue
		}
		fields := make([]string, len(seqs))
		copy(fields, seqs)
		refs = append(refs, ref{g, pipe.HMGet(ctx, sale.OrdersKey(home[i]), fields...)})
	}
	if len(refs) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	var out []*model.Order
	for _, r := range refs {
		for _, v := range r.cmd.Val() {
			if rec, ok := v.(string); ok {
				if o, err := sale.ParseOrderRecord(r.goods, rec); err == nil && o.UserID == userID {
					out = append(out, o)
				}
			}
		}
	}
	return out, nil
}
