package orders

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// payScript pays an unpaid order of the user's. An order past its deadline
// is expired here instead (the expiry tick may not have run yet), so pay and
// expire can never both win.
//
// KEYS: scriptKeys
// ARGV: 1 sequence, 2 user ID, 3 now ms, 4 discount cents (at most the
// amount), 5 user coupon ID (0: none)
// Returns "word:remaining:slot:version:record" where word is ok | unchanged (already
// paid: the record says with which coupon) | expired (expired, cancelled,
// failed or refunded) | lapsed (past its deadline: expired now), or not_found.
// A paid record carries the discount, the coupon and the paid time (fields
// 11–13); revenue counts the amount before the discount, as the store's
// does, and discount the coupons' share of it (net = revenue - discount).
var payScript = redis.NewScript(sale.GoodsLua + payLua)

const payLua = `
local rec, f = order(ARGV[1], ARGV[2])
if not rec then return 'not_found' end
if f[F_STATUS] == 'paid' then return answer('unchanged', rec) end
if f[F_STATUS] ~= 'unpaid' then return answer('expired', rec) end
if tonumber(ARGV[3]) >= tonumber(f[F_EXPIRES]) then return answer('lapsed', close(f, 'expired', ARGV[3], true)) end
redis.call('ZREM', K_DEADLINES, f[F_SEQ])
redis.call('HINCRBY', K_COUNTS, 'unpaid', -1)
redis.call('HINCRBY', K_COUNTS, 'paid', 1)
redis.call('HINCRBY', K_COUNTS, 'revenue', f[F_AMOUNT])
f[F_FAILURE] = f[F_FAILURE] or ''
f[F_DISCOUNT] = tostring(math.max(0, math.min(tonumber(ARGV[4]), tonumber(f[F_AMOUNT]))))
redis.call('HINCRBY', K_COUNTS, 'discount', f[F_DISCOUNT])
f[F_COUPON] = ARGV[5]
f[F_PAID_AT] = ARGV[3]
return answer('ok', save(f, 'paid', ARGV[3]))
`

// payScriptKeyed is payScript with an Idempotency-Key: KEYS[11] keeps the
// answer, ARGV[6] (the last) is its TTL in ms.
var payScriptKeyed = sale.KeyedGoodsScript(payLua, "true")

// PayOrder pays the user's order (which takes it off the deadlines). Paying again
// answers the paid order unchanged; an expired or cancelled order is refused.
func (s *Ledger) PayOrder(ctx context.Context, userID, orderID int64) (*model.Order, error) {
	return s.payOrder(ctx, userID, orderID, s.Now())
}

func (s *Ledger) payOrder(ctx context.Context, userID, orderID int64, now time.Time) (*model.Order, error) {
	o, code, err := s.runOrderScript(ctx, userID, orderID, payScript, now, 0, 0)
	if err != nil {
		return nil, err
	}
	switch code {
	case "ok", "unchanged", model.OrderPaid:
		return o, nil
	default: // expired, lapsed, or a final status from the store
		return nil, db.ErrExpired
	}
}

// cancelScript cancels an unpaid order of the user's and returns its unit to stock.
//
// KEYS: scriptKeys
// ARGV: 1 sequence, 2 user ID, 3 now ms
// Returns "word:remaining:slot:version:record" where word is ok | unchanged (already
// cancelled) | paid | expired (expired or failed) | lapsed (past its
// deadline: expired now), or not_found.
var cancelScript = redis.NewScript(sale.GoodsLua + cancelLua)

const cancelLua = `
local rec, f = order(ARGV[1], ARGV[2])
if not rec then return 'not_found' end
if f[F_STATUS] == 'cancelled' then return answer('unchanged', rec) end
if f[F_STATUS] == 'paid' then return answer('paid', rec) end
if f[F_STATUS] ~= 'unpaid' then return answer('expired', rec) end
if tonumber(ARGV[3]) >= tonumber(f[F_EXPIRES]) then return answer('lapsed', close(f, 'expired', ARGV[3], true)) end
return answer('ok', close(f, 'cancelled', ARGV[3], true))
`

// cancelScriptKeyed is cancelScript with an Idempotency-Key: KEYS[11] keeps
// the answer, ARGV[4] is its TTL in ms.
var cancelScriptKeyed = sale.KeyedGoodsScript(cancelLua, "true")

// CancelOrder cancels the user's unpaid order and puts its unit back in stock.
func (s *Ledger) CancelOrder(ctx context.Context, userID, orderID int64) (*model.Order, error) {
	o, code, err := s.runOrderScript(ctx, userID, orderID, cancelScript, s.Now())
	if err != nil {
		return nil, err
	}
	switch code {
	case "ok", "unchanged", model.OrderCancelled:
		return o, nil
	case model.OrderPaid:
		return nil, db.Errorf(db.ECONFLICT, "a paid order cannot be cancelled")
	default:
		return nil, db.ErrExpired
	}
}

// expireScript expires an unpaid order whose deadline has passed: the unit
// goes back to stock and the user's limit mark is cleared. Anything else is
// left alone, so it may run any number of times (ExpireDue runs it in batches).
//
// KEYS: scriptKeys
// ARGV: 1 sequence, 2 now ms
// Returns "word:remaining:slot:version:record" where word is ok | paid | closed
// (already expired, cancelled or failed) | not_due, or not_found.
var expireScript = redis.NewScript(sale.GoodsLua + `
local rec, f = order(ARGV[1])
if not rec then return 'not_found' end
if f[F_STATUS] == 'paid' then return answer('paid', rec) end
if f[F_STATUS] ~= 'unpaid' then return answer('closed', rec) end
if tonumber(ARGV[2]) < tonumber(f[F_EXPIRES]) then return answer('not_due', rec) end
return answer('ok', close(f, 'expired', ARGV[2], true))
`)

// ErrNotDue is returned when an order's expiry runs before its deadline.
var ErrNotDue = &db.Error{Code: db.ECONFLICT, Message: "the order is not due to expire yet"}

// ExpireOrder expires the order if it is still unpaid at its deadline; an
// order paid, closed or unknown is left alone (nil), one not yet due is ErrNotDue.
func (s *Ledger) ExpireOrder(ctx context.Context, orderID int64) error {
	return s.expireOrder(ctx, orderID, s.Now())
}

func (s *Ledger) expireOrder(ctx context.Context, orderID int64, now time.Time) error {
	_, code, err := s.runOrderScript(ctx, 0, orderID, expireScript, now)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	if code == "not_due" {
		return ErrNotDue
	}
	return nil
}

// voidScript ends an order the durable unit guard refused: its unit was
// sold to an earlier order already (Redis had been restored from an old
// snapshot), so it fails and the unit is not returned to stock; the user's
// limit mark is cleared. An unpaid order fails as sold_twice; a paid one as
// refund_due, leaving the paid count and the revenue. ARGV 3–5 name the
// refused order, so an order that took its sequence since is left alone.
//
// KEYS: scriptKeys
// ARGV: 1 sequence, 2 now ms, 3 user ID, 4 unit, 5 created ms
// Returns "word:remaining:slot:version:record" where word is ok (it failed) | closed
// (it had ended already) | other (another order holds the sequence), or not_found.
var voidScript = redis.NewScript(sale.GoodsLua + `
local rec, f = order(ARGV[1])
if not rec then return 'not_found' end
if f[F_USER] ~= ARGV[3] or f[F_UNIT] ~= ARGV[4] or f[F_CREATED] ~= ARGV[5] then return answer('other', rec) end
if f[F_STATUS] == 'unpaid' then
	f[F_FAILURE] = 'sold_twice'
	return answer('ok', close(f, 'failed', ARGV[2], false))
end
if f[F_STATUS] ~= 'paid' then return answer('closed', rec) end
f[F_FAILURE] = 'refund_due'
if redis.call('HINCRBY', K_HELD, f[F_USER], -1) <= 0 then redis.call('HDEL', K_HELD, f[F_USER]) end
redis.call('HINCRBY', K_COUNTS, 'paid', -1)
redis.call('HINCRBY', K_COUNTS, 'failed', 1)
redis.call('HINCRBY', K_COUNTS, 'revenue', -tonumber(f[F_AMOUNT]))
addCount('discount', -(tonumber(f[F_DISCOUNT]) or 0))
return answer('ok', save(f, 'failed', ARGV[2]))
`)

// keyedOrderScripts are the order scripts that honour an Idempotency-Key, each with its keyed variant.
var keyedOrderScripts = map[*redis.Script]struct {
	script *redis.Script
	op     string
}{payScript: {payScriptKeyed, "pay"}, cancelScript: {cancelScriptKeyed, "cancel"}, refundScript: {refundScriptKeyed, "refund"}}

// runOrderScript runs one of the order scripts for orderID (owned by userID
// unless it is 0) and pushes the change live. A "not_found" from Redis looks
// in the store, for orders of goods no longer active. extra are the
// script's arguments after the common ones.
func (s *Ledger) runOrderScript(ctx context.Context, userID, orderID int64, script *redis.Script, now time.Time, extra ...any) (*model.Order, string, error) {
	goodsID, seq, ok := sale.SplitOrderID(orderID)
	if !ok {
		return nil, "", db.Errorf(db.ENOTFOUND, "order %d not found", orderID)
	}
	args := []any{seq, userID, now.UnixMilli()}
	if userID == 0 {
		args = []any{seq, now.UnixMilli()}
	}
	args = append(args, extra...)
	b, err := s.orderBucket(ctx, goodsID, seq)
	if err != nil {
		return nil, "", err
	}
	keys := sale.ScriptKeys(b)
	if k, ok := keyedOrderScripts[script]; ok {
		if req, keyed := db.KeyedRequestID(ctx, k.op, userID); keyed {
			script, keys = k.script, sale.ScriptKeys(b, sale.MemoKey(b, req+":"+strconv.FormatInt(seq, 10)))
			args = append(args, db.IdempotencyTTL.Milliseconds())
		}
	}
	res, err := s.Eval(ctx, script, keys, args...).Text()
	if err != nil {
		return nil, "", fmt.Errorf("order %d: %w", orderID, err)
	}
	return s.orderAnswer(ctx, userID, orderID, b, res)
}

// orderAnswer reads an order script's reply about orderID (of userID, 0 for
// any) run in bucket b and pushes a change live. A "not_found" from Redis
// looks in the store, for orders of goods no longer active.
func (s *Ledger) orderAnswer(ctx context.Context, userID, orderID int64, b sale.Bucket, res string) (*model.Order, string, error) {
	a, err := sale.ParseAnswer(b.Goods, res)
	if err != nil {
		return nil, "", err
	}
	if a.Code == "not_found" {
		return s.settledOrder(ctx, userID, orderID)
	}
	o, err := sale.ParseOrderRecord(b.Goods, a.Rec)
	if err != nil {
		return nil, "", err
	}
	if a.Code == "ok" || a.Code == "lapsed" {
		s.PushStock(b, a.Slot, a.Remaining, a.Version)
		s.PushOrder(o)
		switch o.Status {
		case model.OrderExpired, model.OrderCancelled, model.OrderFailed, model.OrderRefunded: // a unit or a shopper's limit came back
			s.SaleChanged(ctx, b.Goods)
		}
	}
	return o, a.Code, nil
}

// orderBucket is the bucket holding the goods' order of sequence seq.
// bucketOfOrder is the bucket an order ID's unit was taken from, and its
// sequence there; an ID no order can have is not found.
func (s *Ledger) bucketOfOrder(ctx context.Context, orderID int64) (sale.Bucket, int64, error) {
	goodsID, seq, ok := sale.SplitOrderID(orderID)
	if !ok {
		return sale.Bucket{}, 0, db.Errorf(db.ENOTFOUND, "order %d not found", orderID)
	}
	b, err := s.orderBucket(ctx, goodsID, seq)
	return b, seq, err
}

func (s *Ledger) orderBucket(ctx context.Context, goodsID, seq int64) (sale.Bucket, error) {
	k, err := s.ShardsOne(ctx, goodsID, true)
	if err != nil {
		return sale.Bucket{}, err
	}
	return sale.BucketOfSeq(goodsID, seq, k), nil
}

// settledOrder answers an order script for an order Redis no longer holds
// (its goods finished): the store has its final status.
func (s *Ledger) settledOrder(ctx context.Context, userID, orderID int64) (*model.Order, string, error) {
	o, err := s.sqlOrder(ctx, userID, orderID)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return nil, "not_found", err
	} else if err != nil {
		return nil, "", err
	}
	if o.Status == model.OrderUnpaid {
		// Redis lost it and the goods is not loaded again yet: nothing may change until it is.
		return nil, "", db.Errorf(db.ECONFLICT, "order %d is being restored; try again shortly", orderID)
	}
	return o, o.Status, nil // paid, expired, cancelled or failed: final
}
