package orders

// Doors into the order ledger for its own behaviour tests (package
// orders_test): a payment or expiry at a chosen time, a flush step by step,
// an order lost as a Redis failure would lose it. Compiled only into this
// package's tests.

import (
	"context"
	"database/sql"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// BetweenMyOrdersReads has MyOrders run f between its read of Redis and
// its read of the store (nil: nothing), as a flush landing there would.
func (s *Ledger) BetweenMyOrdersReads(f func()) { s.betweenReads = f }

// PayAt pays as if the clock read now.
func (s *Ledger) PayAt(ctx context.Context, userID, orderID int64, now time.Time) (*model.Order, error) {
	return s.payOrder(ctx, userID, orderID, now)
}

// ExpireDueWithin is an expiry tick that works up to budget of the wall
// clock (the product's ticks: expiryBudget).
func (s *Ledger) ExpireDueWithin(ctx context.Context, budget time.Duration) (int, error) {
	return s.expireDue(ctx, s.Now(), time.Now().Add(budget))
}

// ExpireAt expires as if the clock read now.
func (s *Ledger) ExpireAt(ctx context.Context, orderID int64, now time.Time) error {
	return s.expireOrder(ctx, orderID, now)
}

// MoveOrderBatch moves one batch of the goods' order records to processing
// and stops there, as a flush killed between the move and the commit would.
func (s *Ledger) MoveOrderBatch(ctx context.Context, goodsID int64) (int, error) {
	recs, err := s.TakeBatch(ctx, sale.FlushQueue(sale.Bucket0(goodsID)))
	return len(recs), err
}

// ApplyOrderBatch writes the batch now in processing to SQLite and commits,
// but leaves it in processing, as a flush killed between the commit and the release would.
func (s *Ledger) ApplyOrderBatch(ctx context.Context, goodsID int64) (int, error) {
	recs, err := s.Redis.LRange(ctx, sale.FlushQueue(sale.Bucket0(goodsID)).Processing, 0, -1).Result()
	if err != nil {
		return 0, err
	}
	return len(recs), s.SQL.Tx(ctx, func(tx *sql.Tx) error { return s.applyOrders(ctx, goodsID, nil)(tx, recs) })
}

// ExpiryLockKeys are the keys of the expiry locks of the goods' buckets.
func (s *Ledger) ExpiryLockKeys(ctx context.Context, goodsID int64) ([]string, error) {
	bs, err := s.BucketsOfGoods(ctx, goodsID)
	keys := make([]string, len(bs))
	for i, b := range bs {
		keys[i] = expiryLockKey(b)
	}
	return keys, err
}

// ExpireFirstDue expires the first n orders due on the goods without the
// tick's lock, as a tick that died after one batch would have left them.
func (s *Ledger) ExpireFirstDue(ctx context.Context, goodsID int64, n int) (int, error) {
	bs, err := s.BucketsOfGoods(ctx, goodsID)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, b := range bs {
		seqs, err := s.Redis.ZRangeByScore(ctx, sale.DeadlinesKey(b), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(s.Now().UnixMilli(), 10), Count: int64(n - total),
		}).Result()
		if err != nil {
			return total, err
		}
		if len(seqs) == 0 {
			continue
		}
		expired, _, err := s.expireBatch(ctx, b, seqs, s.Now())
		total += expired
		if err != nil || total >= n {
			return total, err
		}
	}
	return total, nil
}

// LoseOrder takes an order out of Redis as a node that died before
// replicating its grab would: its record, its flush record and its
// deadline are gone, and its count (the unit and limit mark stay taken, as a
// test needs no more).
func (s *Ledger) LoseOrder(ctx context.Context, orderID int64) error {
	goodsID, seq, _ := sale.SplitOrderID(orderID)
	b, err := s.orderBucket(ctx, goodsID, seq)
	if err != nil {
		return err
	}
	field := strconv.FormatInt(seq, 10)
	rec, err := s.Redis.HGet(ctx, sale.OrdersKey(b), field).Result()
	if err != nil {
		return err
	}
	if err := s.Redis.LRem(ctx, sale.FlushQueue(b).Pending, 0, rec).Err(); err != nil {
		return err
	}
	if err := s.Redis.ZRem(ctx, sale.DeadlinesKey(b), field).Err(); err != nil {
		return err
	}
	if err := s.Redis.HIncrBy(ctx, sale.CountsKey(b), "unpaid", -1).Err(); err != nil {
		return err
	}
	return s.Redis.HDel(ctx, sale.OrdersKey(b), field).Err()
}

// VoidOrder fails the order in Redis as voidConflicts does when the store
// refused it; it answers the script's word and the record it wrote.
func (s *Ledger) VoidOrder(ctx context.Context, o *model.Order) (string, string, error) {
	goodsID, seq, _ := sale.SplitOrderID(o.ID)
	b, err := s.orderBucket(ctx, goodsID, seq)
	if err != nil {
		return "", "", err
	}
	res, err := voidScript.Run(ctx, s.Redis, sale.ScriptKeys(b), seq, s.Now().UnixMilli(), o.UserID, o.Unit, o.CreatedAt.UnixMilli()).Text()
	if err != nil {
		return "", "", err
	}
	a, err := sale.ParseAnswer(goodsID, res)
	return a.Code, a.Rec, err
}

// LoseGoods takes the goods out of Redis as a restart without persistence
// would, every bucket's keys and its flush lanes' processing lists, but
// leaves the lanes' leases: the moment after the restart, before a flusher
// at work has noticed.
func (s *Ledger) LoseGoods(ctx context.Context, goodsID int64) error {
	bs, err := s.BucketsOfGoods(ctx, goodsID)
	if err != nil {
		return err
	}
	for _, b := range bs {
		if err := s.Redis.Del(ctx, append(sale.ScriptKeys(b), sale.FlushQueue(b).Processing)...).Err(); err != nil {
			return err
		}
	}
	return s.Redis.SRem(ctx, sale.ActiveKey, goodsID).Err()
}
