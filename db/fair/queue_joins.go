package fair

import (
	"context"
	"fmt"
	"sync"

	"github.com/seckill/seckill/db/model"
)

// Joins of one waiting room that arrive together share one call of
// queueJoinScript, as grabs share one of the grab script (grab_batch.go):
// while a call is in flight the next joins gather, and the first of them
// sends them all when it returns. A crowd's joins then cost about what the
// crowd's refusals do: a round trip a batch, not a shopper.

// maxJoinBatch is the most joins one call carries.
const maxJoinBatch = 64

type joinBatcher struct {
	mu    sync.Mutex
	lanes map[int64]*joinLane
}

// joinLane gathers one room's joins; at most one call of it is in flight.
type joinLane struct {
	mu      sync.Mutex
	waiting []*joinReq
	running bool
}

type joinReq struct {
	user int64
	join bool
	ctx  context.Context
	done chan struct{}
	res  joinResult
	err  error
}

// joinResult is one shopper's answer: the code, the order they joined in
// (j) and the room after the call.
type joinResult struct {
	code string
	j    int64
	view queueView
}

func (b *joinBatcher) lane(goodsID int64) *joinLane {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.lanes[goodsID]
	if l == nil {
		if len(b.lanes) > 10_000 {
			b.lanes = map[int64]*joinLane{}
		}
		l = &joinLane{}
		b.lanes[goodsID] = l
	}
	return l
}

// do joins the shopper (or looks them up) with whatever joins of the room
// gather meanwhile.
func (b *joinBatcher) do(ctx context.Context, s *Service, g *model.Goods, userID int64, join bool) (joinResult, error) {
	l := b.lane(g.ID)
	r := &joinReq{user: userID, join: join, ctx: ctx, done: make(chan struct{})}
	l.mu.Lock()
	l.waiting = append(l.waiting, r)
	lead := !l.running
	l.running = true
	l.mu.Unlock()
	if lead { // one goroutine a lane while joins wait, never one a shopper
		go l.run(s, g)
	}
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
		return joinResult{}, ctx.Err()
	}
}

// run sends the gathered joins, a batch a call, until none wait.
func (l *joinLane) run(s *Service, g *model.Goods) {
	for {
		l.mu.Lock()
		n := min(len(l.waiting), maxJoinBatch)
		if n == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		batch := l.waiting[:n:n]
		l.waiting = l.waiting[n:]
		l.mu.Unlock()
		s.joinBatch(g, batch)
	}
}

// joinBatch runs one call for the batch and hands each its answer.
func (s *Service) joinBatch(g *model.Goods, batch []*joinReq) {
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	ctx := context.WithoutCancel(batch[0].ctx)
	args := s.queueArgs(g, s.Now(), -1)
	args = append(args, len(batch))
	for _, r := range batch {
		flag := "0"
		if r.join {
			flag = "1"
		}
		args = append(args, r.user, flag)
	}
	res, err := queueJoinScript.Run(ctx, s.Redis, []string{queueKey(g.ID), queueUsersKey(g.ID), queueAdvKey(g.ID)}, args...).Slice()
	if err == nil && len(res) != 5+2*len(batch) {
		err = fmt.Errorf("the join script answered %d values for %d shoppers", len(res), len(batch))
	}
	var v queueView
	if err == nil {
		v, err = parseQueueView(res[:5])
	}
	if err != nil {
		err = fmt.Errorf("join the queue of goods %d: %w", g.ID, err)
		for _, r := range batch {
			r.err = err
		}
		return
	}
	for i, r := range batch {
		code, _ := res[5+2*i].(string)
		j, _ := res[6+2*i].(int64)
		r.res = joinResult{code: code, j: j, view: v}
	}
}
