package fair

// Doors into fair sales for their own behaviour tests (package fair_test):
// joins in bulk, the attack measure's sync at a given time. Compiled only into this package's tests.

import (
	"context"
	"time"
)

// JoinQueueBulk joins shoppers from..to (inclusive) to the goods' waiting
// room straight through the join script, pipelined a thousand at a time
// (the million-shopper measure).
func (s *Service) JoinQueueBulk(ctx context.Context, goodsID, from, to int64, now time.Time) error {
	g, err := s.queueGoods(ctx, goodsID)
	if err != nil {
		return err
	}
	keys := []string{queueKey(goodsID), queueUsersKey(goodsID), queueAdvKey(goodsID), queueJoinLogKey(goodsID)}
	if err := queueJoinScript.Load(ctx, s.Redis).Err(); err != nil {
		return err
	}
	for lo := from; lo <= to; lo += 1000 {
		pipe := s.Redis.Pipeline()
		for u := lo; u <= min(lo+999, to); u++ {
			args, err := s.queueArgs(ctx, g, now, -1)
			if err != nil {
				return err
			}
			args = append(args, 1, u, "1")
			queueJoinScript.EvalSha(ctx, pipe, keys, args...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	return s.markActive(ctx, goodsID)
}

// SyncPowAt is SyncPow having read the clock at now: a loop that read it
// just before the clock stepped into the next window.
func (s *Service) SyncPowAt(ctx context.Context, now time.Time) { s.syncPowAt(ctx, now) }

// FairRefresh is how long a process trusts the fair settings it read.
const FairRefresh = fairRefresh
