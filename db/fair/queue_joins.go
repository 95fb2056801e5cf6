package fair

import (
	"context"
	"fmt"

	"github.com/seckill/seckill/db/groupcommit"
	"github.com/seckill/seckill/db/model"
)

// Joins of one waiting room that arrive together share one call of
// queueJoinScript, as grabs share one of the sale's decision script (db/goods/internal/sale/engine.go):
// while a call is in flight the next joins gather, and the first of them
// sends them all when it returns. A crowd's joins then cost about what the
// crowd's refusals do: a round trip a batch, not a shopper.

// maxJoinBatch is the most joins one call carries.
const maxJoinBatch = 64

// joinBatcher gathers each room's joins; at most one call of a room is in
// flight.
type joinBatcher struct {
	group *groupcommit.Group[int64, joinReq, joinResult]
}

func newJoinBatcher() joinBatcher {
	return joinBatcher{group: groupcommit.New(runJoins, groupcommit.Options{MaxBatch: maxJoinBatch, InFlight: 1})}
}

// joinReq is one shopper's join, or look-up when !join. A batch runs with
// the service and goods row of its first.
type joinReq struct {
	s    *Service
	g    *model.Goods
	user int64
	join bool
}

// joinResult is one shopper's answer: the code, the order they joined in
// (j) and the room after the call.
type joinResult struct {
	code string
	j    int64
	view queueView
}

// do joins the shopper (or looks them up) with whatever joins of the room
// gather meanwhile. A shopper whose ctx ends while their join waits for
// the call in flight is not joined.
func (b *joinBatcher) do(ctx context.Context, s *Service, g *model.Goods, userID int64, join bool) (joinResult, error) {
	return b.group.Do(ctx, g.ID, joinReq{s: s, g: g, user: userID, join: join})
}

func runJoins(ctx context.Context, _ int64, batch []joinReq) ([]joinResult, error) {
	return batch[0].s.joinBatch(ctx, batch[0].g, batch)
}

// joinBatch runs one call for the batch and reads each one's answer.
func (s *Service) joinBatch(ctx context.Context, g *model.Goods, batch []joinReq) ([]joinResult, error) {
	args, err := s.queueArgs(ctx, g, s.Now(), -1)
	if err != nil {
		return nil, err
	}
	args = append(args, len(batch))
	for _, r := range batch {
		flag := "0"
		if r.join {
			flag = "1"
		}
		args = append(args, r.user, flag)
	}
	// A place is told to its shopper: answered once a replica holds it (Durable).
	dctx, durable := s.Durable(ctx)
	res, err := queueJoinScript.Run(dctx, durable, []string{queueKey(g.ID), queueUsersKey(g.ID), queueAdvKey(g.ID), queueJoinLogKey(g.ID)}, args...).Slice()
	if err == nil && len(res) != queueHead+2*len(batch) {
		err = fmt.Errorf("the join script answered %d values for %d shoppers", len(res), len(batch))
	}
	var v queueView
	if err == nil {
		v, err = parseQueueView(res[:queueHead])
	}
	if err != nil {
		return nil, fmt.Errorf("join the queue of goods %d: %w", g.ID, err)
	}
	out := make([]joinResult, len(batch))
	for i := range batch {
		code, _ := res[queueHead+2*i].(string)
		j, _ := res[queueHead+1+2*i].(int64)
		out[i] = joinResult{code: code, j: j, view: v}
	}
	return out, nil
}
