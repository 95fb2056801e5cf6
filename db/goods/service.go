// Package goods is the area of seckill goods in time slots: slots and goods
// in the store (goods.go, validate.go, images.go), what merchants do to them
// (merchant.go), reminders before a sale (reminders.go), live charts
// (samples.go), the stock sync (sync.go) and the demo data (demo.go). Its
// Service composes the rooms below it: the order ledger (goods/internal/orders), on
// the sale core (goods/internal/sale). Plain types live in db/model.
package goods

import (
	"context"
	"time"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/goods/internal/orders"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// Service sells goods: it decides grabs in Redis, keeps the durable record
// in the store, and expires unpaid orders on a periodic tick (expiry.go).
type Service struct {
	*orders.Ledger
	merchantsOf *merchants // the merchant of each sampled goods (nil: asked each time)
	catalog     *Catalog   // what shoppers read, from memory where it is started
	// Fair is told of goods created and changed (nil: nobody): New's fair.
	Fair FairSales
}

// Pass is what a shopper brings to a grab besides the account (sale.Pass).
type Pass = sale.Pass

// CSVColumns are the columns of the orders export, in order (the
// contract's orders.csv header).
var CSVColumns = orders.CSVColumns

// Grab, Outcome, Stage and Quiet are the sale engine's (sale.Decide): what the
// areas above the goods know of it, besides the goods' ID range and the
// hash tag of their Redis keys. No package outside the goods imports the
// goods' rooms (TestLayers).
type (
	Grab     = sale.Grab
	Outcome  = sale.Outcome
	Stage    = sale.Stage
	Quiet    = sale.Quiet
	Quieting = sale.Quieting
)

// MaxID is the largest goods ID (order IDs carry it: sale.OrderID).
const MaxID = sale.MaxID

// ActiveKey is the set of goods loaded into Redis (sale.ActiveKey).
const ActiveKey = sale.ActiveKey

// HashTag is in every Redis key of the goods' first bucket, {goods:ID}: the
// waiting room's keys of the goods carry it too.
func HashTag(id int64) string { return sale.HashTag(id) }

// MsTime is a time in unix ms as the store and Redis keep it, in UTC.
func MsTime(ms int64) time.Time { return sale.MsTime(ms) }

// FairSales is what the goods tell the fair-sale area: goods created (a
// raffle's entries open) and goods changed (settings read are stale); and
// what the goods page asks of it: whether a raffle's units left after the
// draw are sold first come. Its Check is the grab's admission stage.
type FairSales interface {
	Stage
	Created(ctx context.Context, g *model.Goods) error
	Changed(goodsID int64)
	LeftoversOnSale(ctx context.Context, goodsID int64) (bool, error)
}

// New returns the goods service over b with defaults filled in. fair,
// when given, builds the fair-sale area over the goods (fair.New): its
// Check is the grab's admission stage, after the sale's pause and before
// the refusal memo (sale.NewSale), and it is told of goods created and
// changed. It may keep the goods but not call them before New returns.
func New(b *backend.Backend, fair ...func(*Service) FairSales) *Service {
	s := &Service{merchantsOf: new(merchants)}
	var admission []sale.Stage
	for _, f := range fair {
		s.Fair = f(s)
		admission = append(admission, s.Fair)
	}
	sale := sale.NewSale(b, admission...)
	s.Ledger = &orders.Ledger{Sale: sale}
	s.catalog = newCatalog(s)
	sale.Stock = s.catalog.applyStock
	return s
}
