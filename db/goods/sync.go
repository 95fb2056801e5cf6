package goods

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/model"
)

// SyncStock brings the store's remaining stock in line with Redis for the
// slot's goods (slotID 0: every active goods), and retires goods whose sale
// is over and settled, so the flush and the expiry ticks stop visiting them.
func (s *Service) SyncStock(ctx context.Context, slotID int64) error {
	var ids []int64
	var err error
	if slotID > 0 {
		gs, err := s.slotGoodsRows(ctx, slotID)
		if err != nil {
			return err
		}
		for _, g := range gs {
			ids = append(ids, g.ID)
		}
	} else if ids, err = s.activeGoods(ctx); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids) // concurrent syncs lock the goods rows in one order
	type reading struct {
		fresh                     *redis.StringCmd
		free, pending, processing *redis.IntCmd
		unpaid, end               *redis.StringCmd
	}
	pipe := s.Redis.Pipeline()
	rs := make([]reading, len(ids))
	for i, id := range ids {
		q := flushQueue(id)
		rs[i] = reading{
			fresh: pipe.Get(ctx, freshKey(id)), free: pipe.LLen(ctx, freeKey(id)),
			pending: pipe.LLen(ctx, q.Pending), processing: pipe.LLen(ctx, q.Processing),
			unpaid: pipe.HGet(ctx, countsKey(id), model.OrderUnpaid), end: pipe.HGet(ctx, infoKey(id), "end"),
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read stock: %w", err)
	}
	now := s.Now().UnixMilli()
	var done []any
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		for i, id := range ids {
			fresh, err := rs[i].fresh.Int64()
			if err != nil {
				continue // not in Redis: nothing to sync
			}
			// A sync that read Redis earlier than the one that wrote last leaves its figure alone.
			if _, err := tx.ExecContext(ctx, `UPDATE goods SET remaining = ?, synced_ms = ? WHERE id = ? AND (synced_ms IS NULL OR synced_ms <= ?)`,
				fresh+rs[i].free.Val(), now, id, now); err != nil {
				return err
			}
			end, _ := rs[i].end.Int64()
			unpaid, _ := rs[i].unpaid.Int64()
			if end > 0 && end <= now && unpaid == 0 && rs[i].pending.Val() == 0 && rs[i].processing.Val() == 0 {
				done = append(done, id) // no order can change any more and all are flushed
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sync stock: %w", err)
	}
	if len(done) > 0 {
		return s.Redis.SRem(ctx, activeKey, done...).Err()
	}
	return nil
}
