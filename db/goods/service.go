// Package goods is seckill goods in time slots and the orders grabbed from
// them: slots and goods in the store, the sale in Redis (one Lua script per
// grab, pay, cancel and expiry, every key of one goods under its hash tag),
// the batch flush of orders to the store, the stock sync, preheat and the sweep
// of overdue orders, and the demo seeding. Plain types live in db/model.
package goods

import (
	"context"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
)

// Service sells goods: it decides grabs in Redis, keeps the durable record
// in the store, and expires unpaid orders on a periodic tick (expiry.go).
type Service struct {
	*Ledger
	merchantsOf *merchants // the merchant of each sampled goods (nil: asked each time)
	// Fair is told of goods created and changed (nil: nobody).
	Fair FairSales
}

// FairSales is what the goods tell the fair-sale area: goods created (a
// raffle's entries open) and goods changed (settings read are stale).
type FairSales interface {
	Created(ctx context.Context, g *model.Goods) error
	Changed(goodsID int64)
}

// New returns the goods service over b with defaults filled in.
func New(b *backend.Backend) *Service {
	sale := NewSale(b)
	return &Service{Ledger: &Ledger{Sale: sale}, merchantsOf: new(merchants)}
}
