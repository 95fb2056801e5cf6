package orders

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/goods/internal/sale"
)

// resendScript queues every order record the bucket holds (the orders hash)
// for the flush again, in the order of their sequences, so the store takes
// each order's latest state: the apply is idempotent (a version per order),
// so what the store holds already changes nothing, and what it lacks (a
// store restored from a backup older than Redis) is written again.
//
// KEYS: scriptKeys
// Returns how many records it queued.
var resendScript = redis.NewScript(backend.RequeueLua + sale.GoodsLua + `
return requeue_hash(K_PENDING, K_ORDERS)
`)

// ResendOrders queues every order Redis holds of every active goods for the
// flush again (resendScript) and returns how many it queued. After a restore
// of the store from a backup, it brings back the orders flushed after the
// backup was taken, which Redis still holds; the next flush writes them.
func (s *Ledger) ResendOrders(ctx context.Context) (int64, error) {
	ids, err := s.ActiveGoods(ctx)
	if err != nil {
		return 0, fmt.Errorf("list active goods: %w", err)
	}
	var n int64
	var errs []error
	for _, id := range ids {
		bs, err := s.BucketsOfGoods(ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, b := range bs {
			k, err := resendScript.Run(ctx, s.Redis, sale.ScriptKeys(b)).Int64()
			if err != nil {
				errs = append(errs, fmt.Errorf("resend the orders of goods %d: %w", id, err))
			}
			n += k
		}
	}
	return n, errors.Join(errs...)
}
