package goods

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/tasks"
)

// rehearsalRows are the statements that remove what a rehearsal slot (the
// one argument) made in the store, children before their parents. A
// rehearsal's notifications never reach an inbox (inbox.Add) and its orders
// are in no export, so nothing outside these rows points at them; the audit
// log keeps its entries, as it keeps every change.
var rehearsalRows = []string{
	`DELETE FROM raffle_entries WHERE goods_id IN (SELECT id FROM goods WHERE slot_id = ?)`,
	`DELETE FROM raffles WHERE goods_id IN (SELECT id FROM goods WHERE slot_id = ?)`,
	`DELETE FROM queue_codes WHERE goods_id IN (SELECT id FROM goods WHERE slot_id = ?)`,
	`DELETE FROM queue_rooms WHERE goods_id IN (SELECT id FROM goods WHERE slot_id = ?)`,
	`DELETE FROM goods_reminders WHERE goods_id IN (SELECT id FROM goods WHERE slot_id = ?)`,
	`DELETE FROM goods_reminder_deliveries WHERE goods_id IN (SELECT id FROM goods WHERE slot_id = ?)`,
	`DELETE FROM notifications WHERE goods_id IN (SELECT id FROM goods WHERE slot_id = ?)`,
	`DELETE FROM payments WHERE order_id IN (SELECT o.id FROM orders o JOIN goods g ON g.id = o.goods_id WHERE g.slot_id = ?)`,
	`DELETE FROM payments WHERE order_id IN (SELECT c.id FROM order_conflicts c JOIN goods g ON g.id = c.goods_id WHERE g.slot_id = ?)`,
	`DELETE FROM order_conflicts WHERE goods_id IN (SELECT id FROM goods WHERE slot_id = ?)`,
	`DELETE FROM orders WHERE goods_id IN (SELECT id FROM goods WHERE slot_id = ?)`,
	`DELETE FROM id_ceilings WHERE kind = 'goods' AND item_id IN (SELECT id FROM goods WHERE slot_id = ?)`,
	`DELETE FROM goods WHERE slot_id = ?`,
	`DELETE FROM slots WHERE id = ? AND rehearsal = 1`,
}

// rehearsalCoupons gives back the coupons spent on a rehearsal slot's
// orders (the first argument is now, in unix ms; the second the slot):
// unused again while valid, else expired, as a cancelled order's are
// (coupon.Service.Release). A rehearsal is no sale, so what a shopper spent
// on it is theirs again.
const rehearsalCoupons = `UPDATE user_coupons
	SET status = CASE WHEN valid_until_ms > ? THEN 'unused' ELSE 'expired' END, order_id = 0, used_ms = 0
	WHERE status = 'used' AND order_id IN (SELECT o.id FROM orders o JOIN goods g ON g.id = o.goods_id WHERE g.slot_id = ?)`

// DeleteRehearsal removes a rehearsal slot and everything it made: its
// goods, their orders and all else the store holds of them, their Redis
// keys (every bucket's, the waiting room's and the proofs of work under the
// goods' hash tags) and the slot's scheduled stock sync; the coupons spent
// on its orders are given back (rehearsalCoupons). The merchant who made it
// may, and an admin; another merchant finds no such slot (ENOTFOUND). A
// real slot is refused (ECONFLICT), its sale left as it is.
//
// The store goes first, so nothing loads the goods into Redis again (the
// preheat reads the store) and a flush still holding a batch of them fails
// on the goods gone; then Redis, where grabs find the goods unknown.
func (s *Service) DeleteRehearsal(ctx context.Context, by model.Claims, id int64) (err error) {
	defer s.announce(ctx, &err)
	if !by.Staff() {
		return db.ErrForbidden
	}
	sl, err := s.OwnedSlot(ctx, by, id)
	if err != nil {
		return err
	}
	if !sl.Rehearsal {
		return db.Errorf(db.ECONFLICT, "slot %d is a real sale, not a rehearsal: it cannot be deleted", id)
	}
	gs, err := s.SlotGoodsRows(ctx, id)
	if err != nil {
		return err
	}
	for i := range gs { // watchers see the sale end, and grabs in flight are refused
		s.pushState(ctx, &gs[i], model.SlotEnded)
	}
	var gone int64
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, rehearsalCoupons, s.Now().UnixMilli(), id); err != nil {
			return fmt.Errorf("give back the coupons of rehearsal slot %d: %w", id, err)
		}
		for _, q := range rehearsalRows {
			res, err := tx.ExecContext(ctx, q, id)
			if err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
			gone, _ = res.RowsAffected() // the last: the slot's own row
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete rehearsal slot %d: %w", id, err)
	}
	if gone == 0 {
		return db.Errorf(db.ENOTFOUND, "slot %d not found", id)
	}
	if err := s.forgetGoods(ctx, gs); err != nil {
		return fmt.Errorf("delete rehearsal slot %d: its Redis keys: %w", id, err)
	}
	if s.Queue != nil {
		err := s.Queue.DeleteTask(tasks.QueueCritical, tasks.SlotSyncTaskID(sl.ID, sl.EndAt))
		if err != nil && !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
			s.Log.Warn("delete a rehearsal's stock sync; it finds nothing to do", "slot", id, "err", err)
		}
	}
	return nil
}

// forgetGoods removes every Redis key of the goods, on every server: the
// keys under each bucket's hash tag, and the goods in the set of active
// goods (the waiting rooms' tick drops goods it no longer finds). Every process is told the sale changed, so none
// answers from what it remembered of it.
func (s *Service) forgetGoods(ctx context.Context, gs []model.Goods) error {
	if len(gs) == 0 {
		return nil
	}
	tags := map[string]bool{}
	ids := make([]any, len(gs))
	for i, g := range gs {
		ids[i] = strconv.FormatInt(g.ID, 10)
		for _, b := range sale.BucketsOf(g.ID, g.Shards) {
			tags[b.Tag()] = true
		}
	}
	if err := s.Redis.SRem(ctx, sale.ActiveKey, ids...).Err(); err != nil {
		return err
	}
	err := rdb.ForEachServer(ctx, s.Redis, func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, "{goods:*", 1000).Iterator()
		var doomed []string
		for iter.Next(ctx) {
			k := iter.Val()
			if end := strings.IndexByte(k, '}'); end > 0 && tags[k[:end+1]] {
				doomed = append(doomed, k)
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		for _, k := range doomed { // one at a time: keys of several tags are in several cluster slots
			if err := c.Del(ctx, k).Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, g := range gs {
		s.SaleChanged(ctx, g.ID)
		if s.Fair != nil {
			s.Fair.Changed(g.ID)
		}
	}
	return nil
}
