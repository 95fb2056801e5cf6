package fair

// Hooks into fair sales for their behaviour tests and the load bench:
// joins in bulk (the raffle's are in raffle/testhooks.go). Nothing in the
// product calls them.

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

// SetGrabHook runs hook (nil: none) as each grab of queued goods ends,
// before its time is taken: the tests inject latency into the grab path by
// moving the injected clock there.
func (s *Service) SetGrabHook(hook func()) {
	if hook == nil {
		s.queues.hook.Store(nil)
		return
	}
	s.queues.hook.Store(&hook)
}
