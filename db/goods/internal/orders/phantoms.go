package orders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/model"
)

// Phantom wins: orders a shopper was told are theirs (a 201) that a Redis
// failure took away before anything durable held them. With WAIT (the
// default wherever there are replicas, db/rdb/replicas.go) a grab is
// acknowledged only once a replica has it, and there are none. Without it
// (REDIS_WAIT_REPLICAS=0), or on a server restarted without persistence, the
// last writes of a node that dies are lost, and the orders among them are
// in neither Redis nor the durable store afterwards.
//
// Only the process that answered knows of such an order. So each process
// keeps the orders it acknowledged over the last PhantomWindow (a journal in
// memory), and watches its Redis client's count of failover errors
// (rdb.Redis.Failovers). When the count moves, once it has been still for
// PhantomSettle (the promotion done, flushes caught up), it checks every
// order of the journal acknowledged up to the failure: one that Redis holds
// (as its shopper's) or the store holds is kept. The rest are checked again
// after two flush leases, by when a flusher that took them from the dead
// node has committed them or been fenced off (db/backend/lease.go). What is
// missing then is a phantom win: recorded in the store as failed
// (sold_twice: it was unpaid, nothing was charged) and told to its shopper,
// live (the order event) and in the inbox.

// PhantomSettle is how long the failover count must stay still before the
// check: the cluster has promoted a replica and grabs run again.
const PhantomSettle = 3 * time.Second

// NotificationOrderFailed is the inbox kind of an order that failed after it was acknowledged.
const NotificationOrderFailed = "order_failed"

// WatchPhantoms runs until ctx ends: at each move of failovers() (this
// process's count of failover errors) or of the count of losses any process
// found (lostKey), it waits until both have been still for PhantomSettle and
// then finds and tells the phantom wins among this process's orders
// (FindPhantoms). Web processes run it.
func (s *Ledger) WatchPhantoms(ctx context.Context, failovers func() int64) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	type counts struct{ lost, failovers int64 }
	count := func() counts {
		n, _ := s.Redis.Get(ctx, sale.LostKey).Int64() // unread (Redis away): the failovers move
		return counts{n, failovers()}
	}
	last, moved := count(), time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if n := count(); n != last {
			last, moved = n, now
			continue
		}
		if moved.IsZero() || now.Sub(moved) < PhantomSettle {
			continue
		}
		moved = time.Time{}
		n, err := s.FindPhantoms(ctx, now)
		if err != nil {
			s.Log.Error("look for orders lost with a Redis node", "err", err)
			moved = now // again after the next settle
		} else if n > 0 {
			s.Log.Warn("orders acknowledged and then lost with a Redis node: failed and told to their shoppers", "orders", n)
		}
	}
}

// FindPhantoms checks the orders this process acknowledged up to upTo and
// fails and tells those neither Redis nor the store holds (see above). It
// returns how many it failed.
func (s *Ledger) FindPhantoms(ctx context.Context, upTo time.Time) (int, error) {
	missing, err := s.missingOrders(ctx, s.Acks.UpTo(upTo))
	if err != nil || len(missing) == 0 {
		return 0, err
	}
	select { // a flusher that took them from the dead node commits or is fenced within its lease
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(2 * backend.FlushLeaseTTL):
	}
	if missing, err = s.missingOrders(ctx, missing); err != nil {
		return 0, err
	}
	for _, a := range missing {
		if err := s.failPhantom(ctx, a); err != nil {
			return 0, err
		}
	}
	return len(missing), nil
}

// PhantomsFound is how many phantom wins this process has found and
// recorded as failed since it started.
func (s *Ledger) PhantomsFound() int64 { return s.phantoms.Load() }

// missingOrders returns the acknowledged orders held as their shopper's
// neither in Redis (read in pipelines) nor in the store.
func (s *Ledger) missingOrders(ctx context.Context, acks []sale.Acked) ([]sale.Acked, error) {
	type check struct {
		a   sale.Acked
		o   *model.Order
		rec *redis.StringCmd
	}
	var missing []sale.Acked
	for start := 0; start < len(acks); start += 1000 {
		var checks []check
		_, err := s.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, a := range acks[start:min(start+1000, len(acks))] {
				o, err := sale.ParseOrderRecord(a.GoodsID, a.Rec)
				if err != nil {
					continue
				}
				_, seq, _ := sale.SplitOrderID(o.ID)
				b, err := s.orderBucket(ctx, a.GoodsID, seq)
				if err != nil {
					return err
				}
				checks = append(checks, check{a, o, p.HGet(ctx, sale.OrdersKey(b), strconv.FormatInt(seq, 10))})
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("look for acknowledged orders in Redis: %w", err)
		}
		for _, c := range checks {
			if rec, err := c.rec.Result(); err == nil {
				if r, err := sale.DecodeOrderRec(rec); err == nil && r.User == c.o.UserID {
					continue
				}
			}
			var n int
			if err := s.SQL.R.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM orders WHERE id = ? AND user_id = ?)
				+ (SELECT COUNT(*) FROM order_conflicts WHERE id = ? AND user_id = ?)`, c.o.ID, c.o.UserID, c.o.ID, c.o.UserID).Scan(&n); err != nil {
				return nil, fmt.Errorf("look for order %d: %w", c.o.ID, err)
			}
			if n == 0 {
				missing = append(missing, c.a)
			}
		}
	}
	return missing, nil
}

// failPhantom records a lost order in the store as failed (sold_twice:
// unpaid, nothing charged; its unit is on sale again) and tells its shopper.
func (s *Ledger) failPhantom(ctx context.Context, a sale.Acked) error {
	o, err := sale.ParseOrderRecord(a.GoodsID, a.Rec)
	if err != nil {
		return err
	}
	now := s.Now().UTC().Truncate(time.Millisecond)
	o.Status, o.Failure, o.Version, o.UpdatedAt = model.OrderFailed, model.FailureSoldTwice, o.Version+1, now
	var told map[int64]model.Notification
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO orders (`+orderTableColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, 0)
			ON CONFLICT DO NOTHING`, o.ID, o.GoodsID, o.UserID, o.Unit, o.AmountCents, o.Status, o.CreatedAt.UnixMilli(),
			o.ExpiresAt.UnixMilli(), o.UpdatedAt.UnixMilli(), o.Version, o.Failure)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // held after all
		}
		told, err = notifyFailed(ctx, tx, o, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("fail lost order %d: %w", o.ID, err)
	}
	if told == nil {
		return nil
	}
	s.phantoms.Add(1)
	// Redis's counts gain the failed order, as a void's do, so the stock
	// check agrees with the store. (A bucket not loaded again yet gets its
	// counts from the store when it is: the load clears what is there.)
	_, seq, _ := sale.SplitOrderID(o.ID)
	if b, err := s.orderBucket(ctx, o.GoodsID, seq); err == nil {
		if err := s.Redis.HIncrBy(ctx, sale.CountsKey(b), "failed", 1).Err(); err != nil {
			s.Log.Warn("count a lost order failed in Redis", "order", o.ID, "err", err)
		}
	}
	s.PushOrder(o)
	if err := s.Events.PublishAll(ctx, inbox.Messages(told)); err != nil {
		s.Log.Warn("push a lost order's notification live", "order", o.ID, "err", err) // the inbox has it
	}
	return nil
}

// notifyFailed puts a failed order's notice in its shopper's inbox within tx.
func notifyFailed(ctx context.Context, tx *sql.Tx, o *model.Order, now time.Time) (map[int64]model.Notification, error) {
	msg := fmt.Sprintf("Order #%s could not be kept: a server failed before it was saved for good. Nothing was charged.", model.OrderNumber(o.ID))
	if o.Failure == model.FailureRefundDue {
		msg = fmt.Sprintf("Order #%s could not be kept: a server failed and its item had gone to another order. Your payment of ¥%d.%02d will be refunded.",
			model.OrderNumber(o.ID), (o.AmountCents-o.DiscountCents)/100, (o.AmountCents-o.DiscountCents)%100)
	}
	return inbox.Add(ctx, tx, []int64{o.UserID}, model.Notification{Kind: NotificationOrderFailed, GoodsID: o.GoodsID, CreatedAt: now.UTC(), Message: msg})
}
