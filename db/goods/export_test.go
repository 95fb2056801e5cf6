package goods

import (
	"context"
	"database/sql"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/model"
)

// Test-only doors into the goods internals, for the external goods_test package.

// GrabWithRequestID runs the grab script under a chosen request ID, as a go-redis retry would.
func (s *Sale) GrabWithRequestID(ctx context.Context, userID, goodsID int64, requestID string) (*model.Order, error) {
	o, _, err := s.grab(ctx, userID, goodsID, requestID, false, true)
	return o, err
}

// GrabBatchTwice runs the batch grab script for users (one grab each, in
// the goods' first bucket, at now) twice under one memo key, as a go-redis
// retry after a lost reply would, and returns both replies.
func (s *Sale) GrabBatchTwice(ctx context.Context, goodsID int64, users []int64, now time.Time) (string, string, error) {
	b := bucket0(goodsID)
	args := []any{1, s.ClusterFlag(), grabMemoTTL.Milliseconds(), len(users)}
	for _, u := range users {
		args = append(args, u, now.UnixMilli(), now.Add(s.OrderTTL).UnixMilli())
	}
	keys := scriptKeys(b, memoKey(b, "batch-1"))
	first, err := s.Eval(ctx, grabBatchScript, keys, args...).Text()
	if err != nil {
		return "", "", err
	}
	second, err := s.Eval(ctx, grabBatchScript, keys, args...).Text()
	return first, second, err
}

// GrabBatches is how many batch calls ran and the grabs they decided.
func (s *Sale) GrabBatches() (calls, grabs int64) {
	return s.batches.calls.Load(), s.batches.grabs.Load()
}

// SQLOrder is the order as the durable store holds it.
func (s *Ledger) SQLOrder(ctx context.Context, orderID int64) (*model.Order, error) {
	return s.sqlOrder(ctx, 0, orderID)
}

// PayAt pays as if the clock read now.
func (s *Ledger) PayAt(ctx context.Context, userID, orderID int64, now time.Time) (*model.Order, error) {
	return s.payOrder(ctx, userID, orderID, now)
}

// ExpireAt expires as if the clock read now.
func (s *Ledger) ExpireAt(ctx context.Context, orderID int64, now time.Time) error {
	return s.expireOrder(ctx, orderID, now)
}

// MoveOrderBatch moves one batch of the goods' order records to processing
// and stops there, as a flush killed between the move and the commit would.
func (s *Ledger) MoveOrderBatch(ctx context.Context, goodsID int64) (int, error) {
	recs, err := s.TakeBatch(ctx, flushQueue(bucket0(goodsID)))
	return len(recs), err
}

// ApplyOrderBatch writes the batch now in processing to SQLite and commits,
// but leaves it in processing, as a flush killed between the commit and the release would.
func (s *Ledger) ApplyOrderBatch(ctx context.Context, goodsID int64) (int, error) {
	recs, err := s.Redis.LRange(ctx, flushQueue(bucket0(goodsID)).Processing, 0, -1).Result()
	if err != nil {
		return 0, err
	}
	return len(recs), s.SQL.Tx(ctx, func(tx *sql.Tx) error { return s.applyOrders(ctx, goodsID, nil)(tx, recs) })
}

// Key names one of the goods' Redis keys ("fresh", "free", "info", "pending", ...).
func Key(goodsID int64, name string) string { return hashTag(goodsID) + ":" + name }

// BucketKey names one of the Redis keys of bucket n of goods of k buckets.
func BucketKey(goodsID int64, n, k int, name string) string {
	return bucket{goods: goodsID, n: n, k: k}.tag() + ":" + name
}

// HomeBucket is the bucket of k holding the user's orders.
func HomeBucket(userID int64, k int) int { return homeBucket(userID, k) }

// ActiveGoods lists the goods the flush, sync and sweep visit.
func (s *Sale) ActiveGoods(ctx context.Context) ([]int64, error) { return s.activeGoods(ctx) }

// OnLiveLoad calls f each time a grab's load of missing goods starts reading SQLite.
func (s *Sale) OnLiveLoad(f func(goodsID int64)) { s.onLiveLoad = f }

// ExpiryLockKeys are the keys of the expiry locks of the goods' buckets.
func (s *Ledger) ExpiryLockKeys(ctx context.Context, goodsID int64) ([]string, error) {
	bs, err := s.bucketsOfGoods(ctx, goodsID)
	keys := make([]string, len(bs))
	for i, b := range bs {
		keys[i] = expiryLockKey(b)
	}
	return keys, err
}

// ExpireFirstDue expires the first n orders due on the goods without the
// tick's lock, as a tick that died after one batch would have left them.
func (s *Ledger) ExpireFirstDue(ctx context.Context, goodsID int64, n int) (int, error) {
	bs, err := s.bucketsOfGoods(ctx, goodsID)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, b := range bs {
		seqs, err := s.Redis.ZRangeByScore(ctx, deadlinesKey(b), &redis.ZRangeBy{
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

// RollBackAsPromotedReplica leaves goods bucket n (of k) as a replica that
// lagged behind its master and was promoted holds it: the order sequence
// back at seq, and the bucket recorded as issued by another node (the dead
// master's ID).
func (s *Sale) RollBackAsPromotedReplica(ctx context.Context, goodsID int64, n, k int, seq int64) error {
	b := bucket{goods: goodsID, n: n, k: k}
	if err := s.Redis.Set(ctx, seqKey(b), seq, 0).Err(); err != nil {
		return err
	}
	return s.Redis.HSet(ctx, infoKey(b), "node", "0123456789abcdef0123456789abcdef01234567").Err()
}

// LoseOrder takes an order out of Redis as a node that died before
// replicating its grab would: its record, its flush record and its
// deadline are gone, and its count (the unit and limit mark stay taken, as a
// test needs no more).
func (s *Ledger) LoseOrder(ctx context.Context, orderID int64) error {
	goodsID, seq, _ := SplitOrderID(orderID)
	b, err := s.orderBucket(ctx, goodsID, seq)
	if err != nil {
		return err
	}
	field := strconv.FormatInt(seq, 10)
	rec, err := s.Redis.HGet(ctx, ordersKey(b), field).Result()
	if err != nil {
		return err
	}
	if err := s.Redis.LRem(ctx, flushQueue(b).Pending, 0, rec).Err(); err != nil {
		return err
	}
	if err := s.Redis.ZRem(ctx, deadlinesKey(b), field).Err(); err != nil {
		return err
	}
	if err := s.Redis.HIncrBy(ctx, countsKey(b), "unpaid", -1).Err(); err != nil {
		return err
	}
	return s.Redis.HDel(ctx, ordersKey(b), field).Err()
}

// MuteSaleChanges stops announcing sale changes to other processes, as if
// every message were lost: they must find out by their poll.
func (s *Sale) MuteSaleChanges() { s.memos.mute.Store(true) }

// JoinQueueBulk joins shoppers from..to (inclusive) to the goods' waiting
// room straight through the join script, pipelined a thousand at a time
// (the million-shopper measure).
func (s *Fair) JoinQueueBulk(ctx context.Context, goodsID, from, to int64, now time.Time) error {
	g, err := s.queueGoods(ctx, goodsID)
	if err != nil {
		return err
	}
	keys := []string{queueKey(goodsID), queueUsersKey(goodsID), queueAdvKey(goodsID)}
	if err := queueJoinScript.Load(ctx, s.Redis).Err(); err != nil {
		return err
	}
	for lo := from; lo <= to; lo += 1000 {
		pipe := s.Redis.Pipeline()
		for u := lo; u <= min(lo+999, to); u++ {
			args := append(s.queueArgs(g, now, -1), 1, u, "1")
			queueJoinScript.EvalSha(ctx, pipe, keys, args...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}
