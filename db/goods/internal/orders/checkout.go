package orders

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// Paid is the answer of PayWith: the order as it stands and how pay went.
type Paid struct {
	Order *model.Order
	// Now is true when this call paid the order; false when it was paid
	// already (Order says with which coupon, if any).
	Now bool
}

// PayWith pays the user's unpaid order with a discount taken by the user
// coupon userCouponID (0: none). An order paid
// already comes back unchanged (Paid.Now false), an expired, cancelled,
// failed or refunded one is db.ErrExpired. The coupon must have been claimed
// for this order by the caller (the checkout), which releases it when the
// order was not paid with it.
func (s *Ledger) PayWith(ctx context.Context, userID, orderID, discountCents, userCouponID int64) (Paid, error) {
	o, code, err := s.runOrderScript(ctx, userID, orderID, payScript, s.Now(), discountCents, userCouponID)
	if err != nil {
		return Paid{}, err
	}
	switch code {
	case "ok":
		return Paid{Order: o, Now: true}, nil
	case "unchanged", model.OrderPaid:
		return Paid{Order: o}, nil
	default: // expired, lapsed, or a final status from the store
		return Paid{Order: o}, db.ErrExpired
	}
}

// gatewayMemoTTL is how long the pay script remembers its answer to one
// gateway payment: past a task's retries (the payments table keeps the
// outcome for good once decided).
const gatewayMemoTTL = 7 * 24 * time.Hour

// PayByGateway pays the order for the payment gateway's payment ref, without
// a coupon: the first run decides, and any later run for the same ref gets
// the same answer (the script remembers it under the ref, in the same step as
// the change). It answers the order and the script's word: ok (paid now),
// unchanged (paid already, before this payment), expired or lapsed.
func (s *Ledger) PayByGateway(ctx context.Context, orderID int64, ref string) (*model.Order, string, error) {
	goodsID, seq, ok := sale.SplitOrderID(orderID)
	if !ok {
		return nil, "", db.Errorf(db.ENOTFOUND, "order %d not found", orderID)
	}
	o, err := s.OrderOf(ctx, orderID)
	if err != nil {
		return nil, "", err
	}
	b, err := s.orderBucket(ctx, goodsID, seq)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256([]byte(ref))
	keys := sale.ScriptKeys(b, sale.MemoKey(b, "gw"+hex.EncodeToString(sum[:16])))
	res, err := s.Eval(ctx, payScriptKeyed, keys, seq, o.UserID, s.Now().UnixMilli(), 0, 0, gatewayMemoTTL.Milliseconds()).Text()
	if err != nil {
		return nil, "", fmt.Errorf("pay order %d: %w", orderID, err)
	}
	return s.orderAnswer(ctx, o.UserID, orderID, b, res)
}

// refundScript refunds a paid order of the user's: it becomes refunded, the
// counts, revenue and discount drop, the user's limit mark is freed and, while the
// sale is live (now < end), the unit goes back on sale.
//
// KEYS: scriptKeys
// ARGV: 1 sequence, 2 user ID, 3 now ms
// Returns "word:remaining:slot:version:record" where word is ok | unchanged
// (refunded already) | not_paid (any other status), or not_found.
var refundScript = redis.NewScript(sale.GoodsLua + refundLua)

const refundLua = `
local rec, f = order(ARGV[1], ARGV[2])
if not rec then return 'not_found' end
if f[F_STATUS] == 'refunded' then return answer('unchanged', rec) end
if f[F_STATUS] ~= 'paid' then return answer('not_paid', rec) end
redis.call('HINCRBY', K_COUNTS, 'paid', -1)
redis.call('HINCRBY', K_COUNTS, 'refunded', 1)
redis.call('HINCRBY', K_COUNTS, 'revenue', -tonumber(f[F_AMOUNT]))
addCount('discount', -(tonumber(f[F_DISCOUNT]) or 0))
if redis.call('HINCRBY', K_HELD, f[F_USER], -1) <= 0 then redis.call('HDEL', K_HELD, f[F_USER]) end
local stop = tonumber(redis.call('HGET', K_INFO, 'end'))
if stop and tonumber(ARGV[3]) < stop then redis.call('RPUSH', K_FREE, f[F_UNIT]) end
redis.call('HINCRBY', K_INFO, 'back', 1) -- see refusals.go
f[F_FAILURE] = f[F_FAILURE] or ''
f[F_DISCOUNT] = f[F_DISCOUNT] or '0'
f[F_COUPON] = f[F_COUPON] or '0'
f[F_PAID_AT] = f[F_PAID_AT] or f[F_UPDATED] -- paid before checkout: paid at its last update
return answer('ok', save(f, 'refunded', ARGV[3]))
`

// refundScriptKeyed is refundScript with an Idempotency-Key: KEYS[11] keeps
// the answer, ARGV[4] is its TTL in ms.
var refundScriptKeyed = sale.KeyedGoodsScript(refundLua, "true")

// Refund refunds the user's paid order: it becomes refunded and its unit
// goes back on sale while the slot is live. Refunding again answers the
// refunded order; any other order is a conflict. An order of goods no
// longer in Redis is refunded in the store.
func (s *Ledger) Refund(ctx context.Context, userID, orderID int64) (*model.Order, error) {
	o, _, err := s.RefundNow(ctx, userID, orderID)
	return o, err
}

// RefundNow is Refund that also says whether this call refunded the order
// (false: it was refunded already), for a refund that must not answer twice.
func (s *Ledger) RefundNow(ctx context.Context, userID, orderID int64) (*model.Order, bool, error) {
	// Goods whose sale ended leave the active set once every order is
	// flushed, but Redis keeps their orders: the refund's record must reach
	// the store, so its goods is made active again (first, so a crash after
	// the refund cannot strand the record); the stock sync retires it again.
	if goodsID, seq, ok := sale.SplitOrderID(orderID); ok {
		b, err := s.orderBucket(ctx, goodsID, seq)
		if err != nil {
			return nil, false, err
		}
		held, err := s.Redis.HExists(ctx, sale.OrdersKey(b), strconv.FormatInt(seq, 10)).Result()
		if err != nil {
			return nil, false, fmt.Errorf("refund order %d: %w", orderID, err)
		}
		if held {
			if err := s.Redis.SAdd(ctx, sale.ActiveKey, goodsID).Err(); err != nil {
				return nil, false, fmt.Errorf("refund order %d: %w", orderID, err)
			}
		}
	}
	o, code, err := s.runOrderScript(ctx, userID, orderID, refundScript, s.Now())
	if err != nil {
		return nil, false, err
	}
	switch code {
	case "ok":
		return o, true, nil
	case "unchanged", model.OrderRefunded:
		return o, false, nil
	case model.OrderPaid: // from the store: goods no longer in Redis
		return s.refundSettled(ctx, userID, o)
	default:
		return nil, false, db.Errorf(db.ECONFLICT, "only a paid order can be refunded; this one is %s", o.Status)
	}
}

// refundSettled refunds a paid order in the store alone (its goods left Redis).
func (s *Ledger) refundSettled(ctx context.Context, userID int64, o *model.Order) (*model.Order, bool, error) {
	now := s.Now().UnixMilli()
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE orders SET status = ?, refunded_ms = ?, updated_ms = ?, version = version + 1
		WHERE id = ? AND user_id = ? AND status = ?`, model.OrderRefunded, now, now, o.ID, userID, model.OrderPaid)
	if err != nil {
		return nil, false, fmt.Errorf("refund order %d: %w", o.ID, err)
	}
	n, _ := res.RowsAffected()
	o, err = s.sqlOrder(ctx, userID, o.ID)
	if err != nil {
		return nil, false, err
	}
	if n == 0 && o.Status != model.OrderRefunded {
		return nil, false, db.Errorf(db.ECONFLICT, "only a paid order can be refunded; this one is %s", o.Status)
	}
	if n == 1 {
		s.PushOrder(o)
	}
	return o, n == 1, nil
}

// CSVColumns are the columns of the orders export, in order (the
// contract's orders.csv header).
var CSVColumns = []string{"number", "order_id", "username", "user_id", "status", "amount", "discount", "paid", "created_at", "paid_at"}

// OrdersCSV flushes the goods' pending orders, so the export is current,
// and answers how to walk its orders in the store, oldest first: each is
// handed to row with its shopper's username as it is read (nothing is
// collected). Goods the caller does not manage are not found.
func (s *Ledger) OrdersCSV(ctx context.Context, by model.Claims, goodsID int64) (func(row func(o *model.Order, username string) error) error, error) {
	g, err := s.Owned(ctx, by, goodsID)
	if err != nil {
		return nil, err
	}
	if g.Rehearsal { // a rehearsal's orders are not the shop's: the export has the header alone
		return func(func(*model.Order, string) error) error { return nil }, nil
	}
	if err := s.flushNow(ctx, goodsID); err != nil {
		return nil, err
	}
	return func(row func(o *model.Order, username string) error) error {
		rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+orderColumns+`, COALESCE(u.username, '') FROM orders o
			LEFT JOIN goods g ON g.id = o.goods_id LEFT JOIN users u ON u.id = o.user_id
			WHERE o.goods_id = ? ORDER BY o.id`, goodsID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			o, err := scanOrder(scanAlso{rows, []any{&name}})
			if err != nil {
				return err
			}
			if err := row(o, name); err != nil {
				return err
			}
		}
		return rows.Err()
	}, nil
}

// scanAlso scans a row whose columns are those of another scan followed by more.
type scanAlso struct {
	row  interface{ Scan(...any) error }
	more []any
}

func (r scanAlso) Scan(dest ...any) error { return r.row.Scan(append(dest, r.more...)...) }

// flushNow flushes one goods' pending orders, each bucket under its lane's
// lease, waiting (up to 5 s) while another flusher holds a lane: that one
// drains it, and the wait ends once it is empty.
func (s *Ledger) flushNow(ctx context.Context, goodsID int64) error {
	err := s.flushGoods(backend.WaitLanes(ctx, 5*time.Second), goodsID)
	if errors.Is(err, backend.ErrLaneBusy) {
		return db.Errorf(db.EUNAVAILABLE, "the orders of goods %d are being flushed; try again shortly", goodsID)
	}
	return err
}
