package orders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// FlushOrders moves every active goods' order records to the store through the
// crash-safe flush queue, then fails the orders the durable guard refused
// and flushes their goods again, so the store records the failures at once.
func (s *Ledger) FlushOrders(ctx context.Context) error {
	ids, err := s.ActiveGoods(ctx)
	if err != nil {
		return fmt.Errorf("list active goods: %w", err)
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, s.flushGoods(ctx, id))
	}
	voided, err := s.voidConflicts(ctx)
	errs = append(errs, err)
	for _, id := range voided { // active or not: a void's record must reach the store
		errs = append(errs, s.flushGoods(ctx, id))
	}
	return errors.Join(errs...)
}

// flushGoods moves one goods' order records to the store, then drops the orders
// that ended from their users' lists in Redis: the store now shows them, so My
// orders still does, and a list holds only live orders and those that ended
// since the last flush, however often its user grabs and cancels.
func (s *Ledger) flushGoods(ctx context.Context, goodsID int64) error {
	bs, err := s.BucketsOfGoods(ctx, goodsID)
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range bs {
		errs = append(errs, s.flushBucket(ctx, b))
	}
	return errors.Join(errs...)
}

// flushBucket is flushGoods for one bucket of the goods.
func (s *Ledger) flushBucket(ctx context.Context, b sale.Bucket) error {
	goodsID := b.Goods
	var done, batch endedOrders // of committed batches; of the batch being applied
	apply := s.applyOrders(ctx, goodsID, &batch)
	_, err := s.Flush(ctx, sale.FlushQueue(b), func(tx *sql.Tx, recs []string) error {
		// Flush applies a batch only once the one before is committed and released.
		done.merge(batch)
		batch = endedOrders{}
		return apply(tx, recs)
	})
	if err == nil {
		done.merge(batch)
	}
	if len(done) > 0 {
		if terr := s.trimMine(ctx, b, done); terr != nil {
			err = errors.Join(err, terr)
		}
	}
	return err
}

// endedOrders are orders that ended (expired, cancelled or failed), as user
// ID → comma-separated sequences, in trimMineScript's terms.
type endedOrders map[string]string

func (e *endedOrders) add(o *model.Order) {
	if o.Status == model.OrderUnpaid || o.Status == model.OrderPaid {
		return
	}
	if *e == nil {
		*e = endedOrders{}
	}
	_, seq, _ := sale.SplitOrderID(o.ID)
	uid, sq := strconv.FormatInt(o.UserID, 10), strconv.FormatInt(seq, 10)
	if old := (*e)[uid]; old != "" {
		sq = old + "," + sq
	}
	(*e)[uid] = sq
}

func (e *endedOrders) merge(o endedOrders) {
	for uid, seqs := range o {
		if *e == nil {
			*e = endedOrders{}
		}
		if old := (*e)[uid]; old != "" {
			seqs = old + "," + seqs
		}
		(*e)[uid] = seqs
	}
}

// trimMineScript drops ended orders from their users' lists (the mine hash).
// It runs once their final records are in the store; an order whose sequence
// holds a live order of the user again (a restore sent it back) stays.
//
// KEYS: scriptKeys
// ARGV: pairs of user ID and comma-separated sequences
// Returns how many sequences it dropped.
var trimMineScript = redis.NewScript(sale.GoodsLua + `
local dropped = 0
for i = 1, #ARGV, 2 do
	local uid, mine = ARGV[i], redis.call('HGET', K_MINE, ARGV[i])
	if mine then
		local drop = {}
		for seq in string.gmatch(ARGV[i + 1], '[^,]+') do
			local rec = redis.call('HGET', K_ORDERS, seq)
			local f = rec and split(rec)
			if not (f and f[F_USER] == uid and (f[F_STATUS] == 'unpaid' or f[F_STATUS] == 'paid')) then drop[seq] = true end
		end
		local keep = {}
		for seq in string.gmatch(mine, '[^,]+') do
			if drop[seq] then dropped = dropped + 1 else keep[#keep + 1] = seq end
		end
		if #keep == 0 then
			redis.call('HDEL', K_MINE, uid)
		else
			redis.call('HSET', K_MINE, uid, table.concat(keep, ','))
		end
	end
end
return dropped
`)

func (s *Ledger) trimMine(ctx context.Context, b sale.Bucket, ended endedOrders) error {
	args := make([]any, 0, 2*len(ended))
	for uid, seqs := range ended {
		args = append(args, uid, seqs)
	}
	if err := trimMineScript.Run(ctx, s.Redis, sale.ScriptKeys(b), args...).Err(); err != nil {
		return fmt.Errorf("trim the order lists of goods %d: %w", b.Goods, err)
	}
	return nil
}
