package orders

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/rdb"
)

// Expiry without a task per order: the grab script adds each order to its
// goods' deadlines ZSET, and a periodic task (tasks.TypeOrderExpireDue,
// every second) calls ExpireDue, which pops what is due on every active goods
// and expires it in batches, one pipelined round trip of expireScript a
// batch. A grab then pays no enqueue, and paying or cancelling deletes no task.
// The order expires at its deadline, on the first tick at or after it, and
// never before: expireScript checks the deadline against the tick's clock,
// and pay and cancel past the deadline expire the order themselves.

// expiryLockKey is the lock of one bucket's expiry (under the bucket's hash
// tag): one tick at a time expires a bucket, while ticks of several worker
// processes expire different goods (or buckets) at once.
func expiryLockKey(b sale.Bucket) string { return b.Tag() + ":expiry:lock" }

// expiryLockTTL frees the lock of a tick that died holding it: the next tick
// after it takes over the orders that tick left.
const expiryLockTTL = 10 * time.Second

// expiryBudget is how long one tick works before leaving the rest to the next,
// well inside the lock's TTL.
const expiryBudget = 5 * time.Second

// ExpiryBatch is how many orders of one goods one round trip expires.
const ExpiryBatch = 500

// ExpireDue expires every unpaid order past its deadline on every active
// goods and returns how many it expired. Each bucket is expired under its
// own lock: a bucket whose lock another tick holds is skipped (that tick
// expires it), so two workers' ticks expire different goods at once.
func (s *Ledger) ExpireDue(ctx context.Context) (int, error) {
	return s.expireDue(ctx, s.Now(), time.Now().Add(expiryBudget))
}

// expireDue expires, as of now, what is due on every active goods, bucket
// by bucket under each bucket's lock, until nothing is due or the wall
// clock passes stop.
func (s *Ledger) expireDue(ctx context.Context, now, stop time.Time) (int, error) {
	ids, err := s.ActiveGoods(ctx)
	if err != nil {
		return 0, err
	}
	shards, err := s.ShardsOf(ctx, false, ids...)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		for _, b := range sale.BucketsOf(id, shards[id]) {
			k, err := s.expireLocked(ctx, b, now, stop)
			n += k
			if err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// expireLocked is expireBucket under the bucket's expiry lock; a bucket
// whose lock another tick holds is skipped, and so is one with nothing due,
// found by one read without the lock (a tick on an idle goods costs one
// command, not the lock's four).
func (s *Ledger) expireLocked(ctx context.Context, b sale.Bucket, now, stop time.Time) (int, error) {
	due, err := s.Redis.ZCount(ctx, sale.DeadlinesKey(b), "-inf", strconv.FormatInt(now.UnixMilli(), 10)).Result()
	if err != nil || due == 0 {
		return 0, err
	}
	token, key := rdb.NewRequestID(), expiryLockKey(b)
	ok, err := rdb.TakeOwned(ctx, s.Redis, key, token, expiryLockTTL)
	if err != nil || !ok {
		return 0, err
	}
	defer func() {
		if released, err := rdb.ReleaseOwned(context.WithoutCancel(ctx), s.Redis, key, token); err != nil || !released {
			s.Log.Warn("order expiry outlived its bucket's lock; another tick may have run alongside", "goods", b.Goods, "err", err)
		}
	}()
	return s.expireBucket(ctx, b, now, stop)
}

// expireBucket expires, as of now, what is due in one bucket of a goods.
func (s *Ledger) expireBucket(ctx context.Context, b sale.Bucket, now, stop time.Time) (int, error) {
	n, id := 0, b.Goods
	{
		for time.Now().Before(stop) {
			seqs, err := s.Redis.ZRangeByScore(ctx, sale.DeadlinesKey(b), &redis.ZRangeBy{
				Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: ExpiryBatch,
			}).Result()
			if err != nil {
				return n, fmt.Errorf("due orders of goods %d: %w", id, err)
			}
			if len(seqs) == 0 {
				break
			}
			expired, gone, err := s.expireBatch(ctx, b, seqs, now)
			n += expired
			if err != nil {
				return n, err
			}
			if len(seqs) < ExpiryBatch || expired+gone == 0 {
				break // all due ones done, or a full batch of orders not due by their own record
			}
		}
	}
	return n, nil
}

// expireBatch runs expireScript for each of the goods' sequences in one
// pipeline and pushes each expiry live. Entries whose order is no longer
// unpaid (or no longer there) are dropped from the deadlines; expireScript
// leaves them, so they would otherwise come back every tick. It returns how
// many it expired and how many such entries it dropped.
func (s *Ledger) expireBatch(ctx context.Context, b sale.Bucket, seqs []string, now time.Time) (expired, gone int, err error) {
	goodsID := b.Goods
	// Orders held for a provider's trade are the checkout's to close
	// (provider.go): they leave the deadlines here.
	held, err := s.heldOf(ctx, b, seqs)
	if err != nil {
		return 0, 0, err
	}
	if len(held) > 0 {
		drop, keep := make([]any, 0, len(held)), make([]string, 0, len(seqs)-len(held))
		for _, sq := range seqs {
			if held[sq] {
				drop = append(drop, sq)
			} else {
				keep = append(keep, sq)
			}
		}
		if err := s.Redis.ZRem(ctx, sale.DeadlinesKey(b), drop...).Err(); err != nil {
			return 0, 0, fmt.Errorf("drop held orders of goods %d from the deadlines: %w", goodsID, err)
		}
		if seqs, gone = keep, len(drop); len(seqs) == 0 {
			return 0, gone, nil
		}
	}
	keys, ms := sale.ScriptKeys(b), now.UnixMilli()
	cmds := make([]*redis.Cmd, len(seqs))
	run := func(which func(i int) bool) error {
		pipe := s.Redis.Pipeline()
		for i, sq := range seqs {
			if which(i) {
				cmds[i] = expireScript.EvalSha(ctx, pipe, keys, sq, ms)
			}
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	err = run(func(int) bool { return true })
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// Run again only the orders the script did not reach: another
		// tick may have loaded it while this pipeline ran, so the later
		// ones ran (and expired their orders) and must not run twice.
		if err := expireScript.Load(ctx, s.Redis).Err(); err != nil {
			return 0, 0, fmt.Errorf("load the expiry script: %w", err)
		}
		err = run(func(i int) bool { return redis.HasErrorPrefix(cmds[i].Err(), "NOSCRIPT") })
	}
	if err != nil {
		return 0, 0, fmt.Errorf("expire due orders of goods %d: %w", goodsID, err)
	}
	var stale []any
	for i, cmd := range cmds {
		res, err := cmd.Text()
		if err != nil {
			return expired, gone, fmt.Errorf("expire order %s of goods %d: %w", seqs[i], goodsID, err)
		}
		a, err := sale.ParseAnswer(goodsID, res)
		if err != nil {
			return expired, gone, err
		}
		switch a.Code {
		case "ok":
			o, err := sale.ParseOrderRecord(goodsID, a.Rec)
			if err != nil {
				return expired, gone, err
			}
			s.PushStock(b, a.Slot, a.Remaining, a.Version)
			s.PushOrder(o)
			expired++
		case "paid", "closed", "not_found":
			stale = append(stale, seqs[i])
		}
	}
	if expired > 0 {
		s.SaleChanged(ctx, goodsID)
	}
	if len(stale) > 0 {
		if err := s.Redis.ZRem(ctx, sale.DeadlinesKey(b), stale...).Err(); err != nil && !errors.Is(err, redis.Nil) {
			return expired, gone, err
		}
	}
	return expired, gone + len(stale), nil
}
