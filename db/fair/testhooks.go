package fair

// Hooks into fair sales for their behaviour tests and the load bench: a
// raffle's pass-on and order made directly, joins in bulk. Nothing in the
// product calls them.

import (
	"context"
	"time"
)

// Test-only doors into the raffle's steps, for the external goods_test package.

// PassOn runs the pass-on of the user's ended order in the raffle of goods, as SettleRaffle does when it finds it ended.
func (s *Service) PassOn(ctx context.Context, goodsID, userID, orderID int64) error {
	g, err := s.Goods.GoodsRow(ctx, goodsID)
	if err != nil {
		return err
	}
	return s.passOn(ctx, g, userID, orderID)
}

// MakeRaffleOrder runs the making of a won entry's order, as SettleRaffle does for an entry without one.
func (s *Service) MakeRaffleOrder(ctx context.Context, goodsID, userID, place int64) error {
	g, err := s.Goods.GoodsRow(ctx, goodsID)
	if err != nil {
		return err
	}
	return s.raffleOrder(ctx, g, userID, place)
}

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
