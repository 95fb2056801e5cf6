package orders

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// An order the shopper pays at a payment provider is held: while a trade
// is open there, the expiry tick leaves the order alone (expireBatch skips
// it and drops it from the deadlines), because the shopper may pay in its
// last second. The checkout closes the trade at the provider first and then
// either pays the order (the provider took the money) or releases it
// (ReleaseHeld: expired, its unit back on sale). A held order is paid by
// PayHeld even past its deadline: the money came while the unit was held.

// heldKey is the set of the bucket's sequences held for a provider's trade.
func heldKey(b sale.Bucket) string { return b.Tag() + ":provider:held" }

// holdScript holds an unpaid order of the user's for a provider's trade.
//
// KEYS: scriptKeys, 11 the held set
// ARGV: 1 sequence, 2 user ID, 3 now ms
// Returns "word:…:record" where word is held | paid | expired (expired,
// cancelled, failed or refunded) | lapsed (past its deadline: expired now), or not_found.
var holdScript = redis.NewScript(sale.GoodsLua + `
local rec, f = order(ARGV[1], ARGV[2])
if not rec then return 'not_found' end
if f[F_STATUS] == 'paid' then return answer('paid', rec) end
if f[F_STATUS] ~= 'unpaid' then return answer('expired', rec) end
if tonumber(ARGV[3]) >= tonumber(f[F_EXPIRES]) then return answer('lapsed', close(f, 'expired', ARGV[3], true)) end
redis.call('SADD', KEYS[11], f[F_SEQ])
return answer('held', rec)
`)

// HoldForProvider holds the user's unpaid order for a trade at a payment
// provider: the expiry will not release it until ReleaseHeld. A paid order
// is a conflict; an ended one (or one past its deadline) db.ErrExpired.
func (s *Ledger) HoldForProvider(ctx context.Context, userID, orderID int64) (*model.Order, error) {
	b, seq, err := s.bucketOfOrder(ctx, orderID)
	if err != nil {
		return nil, err
	}
	res, err := s.Eval(ctx, holdScript, sale.ScriptKeys(b, heldKey(b)), seq, userID, s.Now().UnixMilli()).Text()
	if err != nil {
		return nil, fmt.Errorf("hold order %d: %w", orderID, err)
	}
	o, code, err := s.orderAnswer(ctx, userID, orderID, b, res)
	if err != nil {
		return nil, err
	}
	switch code {
	case "held":
		return o, nil
	case model.OrderPaid:
		return o, db.Errorf(db.ECONFLICT, "the order is paid already")
	default:
		return o, db.ErrExpired
	}
}

// payHeldLua pays the order for a provider's payment: a held order even
// past its deadline; one not held as payScript would (past its deadline it
// lapses). The hold ends either way.
//
// KEYS: scriptKeys, 11 the held set, 12 the payment's memo
// ARGV: 1 sequence, 2 now ms, 3 discount cents, 4 user coupon ID, 5 memo TTL ms
// Returns as payScript: ok | unchanged | expired | lapsed, or not_found.
const payHeldLua = `
local rec, f = order(ARGV[1])
if not rec then return 'not_found' end
local held = redis.call('SREM', KEYS[11], f[F_SEQ]) == 1
if f[F_STATUS] == 'paid' then return answer('unchanged', rec) end
if f[F_STATUS] ~= 'unpaid' then return answer('expired', rec) end
if not held and tonumber(ARGV[2]) >= tonumber(f[F_EXPIRES]) then return answer('lapsed', close(f, 'expired', ARGV[2], true)) end
redis.call('ZREM', K_DEADLINES, f[F_SEQ])
redis.call('HINCRBY', K_COUNTS, 'unpaid', -1)
redis.call('HINCRBY', K_COUNTS, 'paid', 1)
redis.call('HINCRBY', K_COUNTS, 'revenue', f[F_AMOUNT])
f[F_FAILURE] = f[F_FAILURE] or ''
f[F_DISCOUNT] = tostring(math.max(0, math.min(tonumber(ARGV[3]), tonumber(f[F_AMOUNT]))))
addCount('discount', tonumber(f[F_DISCOUNT]))
f[F_COUPON] = ARGV[4]
f[F_PAID_AT] = ARGV[2]
return answer('ok', save(f, 'paid', ARGV[2]))
`

// payHeldScript is payHeldLua remembering its answer per payment.
var payHeldScript = redis.NewScript(sale.GoodsLua + db.Memoize(payHeldLua, "true"))

// PayHeld pays the order for the provider's payment ref, with the discount
// of the user coupon claimed for it (0: none): the first run decides, a
// later one for the same ref answers the same. The word is ok (paid now),
// unchanged (paid before, by another payment), expired or lapsed.
func (s *Ledger) PayHeld(ctx context.Context, orderID int64, ref string, discountCents, userCouponID int64) (*model.Order, string, error) {
	b, seq, err := s.bucketOfOrder(ctx, orderID)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256([]byte(ref))
	keys := sale.ScriptKeys(b, heldKey(b), sale.MemoKey(b, "pv"+hex.EncodeToString(sum[:16])))
	res, err := s.Eval(ctx, payHeldScript, keys, seq, s.Now().UnixMilli(), discountCents, userCouponID, gatewayMemoTTL.Milliseconds()).Text()
	if err != nil {
		return nil, "", fmt.Errorf("pay order %d: %w", orderID, err)
	}
	return s.orderAnswer(ctx, 0, orderID, b, res)
}

// releaseHeldScript ends a held order's hold and, if it is still unpaid,
// expires it (the unit back on sale): its trade is closed at the provider.
//
// KEYS: scriptKeys, 11 the held set
// ARGV: 1 sequence, 2 now ms
// Returns "word:…:record" where word is ok (expired now) | paid | closed, or not_found.
var releaseHeldScript = redis.NewScript(sale.GoodsLua + `
local rec, f = order(ARGV[1])
redis.call('SREM', KEYS[11], ARGV[1])
if not rec then return 'not_found' end
if f[F_STATUS] == 'paid' then return answer('paid', rec) end
if f[F_STATUS] ~= 'unpaid' then return answer('closed', rec) end
return answer('ok', close(f, 'expired', ARGV[2], true))
`)

// ReleaseHeld releases a held order whose trade the provider closed unpaid:
// still unpaid, it expires and its unit goes back on sale. It answers the
// order as it stands.
func (s *Ledger) ReleaseHeld(ctx context.Context, orderID int64) (*model.Order, error) {
	b, seq, err := s.bucketOfOrder(ctx, orderID)
	if err != nil {
		return nil, err
	}
	res, err := s.Eval(ctx, releaseHeldScript, sale.ScriptKeys(b, heldKey(b)), seq, s.Now().UnixMilli()).Text()
	if err != nil {
		return nil, fmt.Errorf("release order %d: %w", orderID, err)
	}
	o, _, err := s.orderAnswer(ctx, 0, orderID, b, res)
	return o, err
}

// heldOf answers which of the bucket's sequences are held for a provider.
func (s *Ledger) heldOf(ctx context.Context, b sale.Bucket, seqs []string) (map[string]bool, error) {
	members := make([]any, len(seqs))
	for i, sq := range seqs {
		members[i] = sq
	}
	in, err := s.Redis.SMIsMember(ctx, heldKey(b), members...).Result()
	if err != nil {
		return nil, fmt.Errorf("held orders of goods %d: %w", b.Goods, err)
	}
	held := map[string]bool{}
	for i, ok := range in {
		if ok {
			held[seqs[i]] = true
		}
	}
	return held, nil
}
