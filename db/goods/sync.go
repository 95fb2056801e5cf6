package goods

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// SyncStock brings the store's remaining stock in line with Redis for the
// slot's goods (slotID 0: every active goods), and retires goods whose sale
// is over and settled, so the flush and the expiry ticks stop visiting them.
func (s *Service) SyncStock(ctx context.Context, slotID int64) error {
	var ids []int64
	var err error
	if slotID > 0 {
		gs, err := s.SlotGoodsRows(ctx, slotID)
		if err != nil {
			return err
		}
		for _, g := range gs {
			ids = append(ids, g.ID)
		}
	} else if ids, err = s.ActiveGoods(ctx); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids) // concurrent syncs lock the goods rows in one order
	shards, err := s.ShardsOf(ctx, false, ids...)
	if err != nil {
		return err
	}
	type reading struct {
		fresh                     *redis.StringCmd
		free, pending, processing *redis.IntCmd
		unpaid, end               *redis.StringCmd
	}
	pipe := s.Redis.Pipeline()
	rs := make([][]reading, len(ids)) // per goods, per bucket
	for i, id := range ids {
		for _, b := range sale.BucketsOf(id, shards[id]) {
			q := sale.FlushQueue(b)
			rs[i] = append(rs[i], reading{
				fresh: pipe.Get(ctx, sale.FreshKey(b)), free: pipe.LLen(ctx, sale.FreeKey(b)),
				pending: pipe.LLen(ctx, q.Pending), processing: pipe.LLen(ctx, q.Processing),
				unpaid: pipe.HGet(ctx, sale.CountsKey(b), model.OrderUnpaid), end: pipe.HGet(ctx, sale.InfoKey(b), "end"),
			})
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read stock: %w", err)
	}
	now := s.Now().UnixMilli()
	var done []any
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		for i, id := range ids {
			remaining, settled, loaded := int64(0), true, true
			for _, r := range rs[i] {
				fresh, err := r.fresh.Int64()
				loaded = loaded && err == nil
				remaining += fresh + r.free.Val()
				end, _ := r.end.Int64()
				unpaid, _ := r.unpaid.Int64()
				settled = settled && end > 0 && end <= now && unpaid == 0 && r.pending.Val() == 0 && r.processing.Val() == 0
			}
			if !loaded {
				continue // not in Redis: nothing to sync
			}
			// A sync that read Redis earlier than the one that wrote last leaves its figure alone.
			if _, err := tx.ExecContext(ctx, `UPDATE goods SET remaining = ?, synced_ms = ? WHERE id = ? AND (synced_ms IS NULL OR synced_ms <= ?)`,
				remaining, now, id, now); err != nil {
				return err
			}
			if settled {
				done = append(done, id) // no order can change any more and all are flushed
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sync stock: %w", err)
	}
	if len(done) > 0 {
		return s.Redis.SRem(ctx, sale.ActiveKey, done...).Err()
	}
	return nil
}
