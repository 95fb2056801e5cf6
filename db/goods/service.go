// Package goods is seckill goods in time slots and the orders grabbed from
// them: slots and goods in the store, the sale in Redis (one Lua script per
// grab, pay, cancel and expiry, every key of one goods under its hash tag),
// the batch flush of orders to the store, the stock sync, preheat and the sweep
// of overdue orders, and the demo seeding. Plain types live in db/model.
package goods

import (
	"context"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
)

// Sale decides grabs in Redis.
type Sale struct {
	*backend.Backend
	// OrderTTL is how long an order may stay unpaid.
	OrderTTL time.Duration
	// SeqBlock is how many order sequences a bucket reserves in the durable
	// store at a time (seq_blocks.go); 0: DefaultSeqBlock.
	SeqBlock int64
	// Gate is asked before a grab reaches Redis (nil: nothing asked).
	Gate Gate

	liveLoads  *singleflight.Group // one load at a time of goods grabs found missing; nil: each grab loads
	onLiveLoad func(goodsID int64) // tests: called as a load starts reading the store
	shards     *shardsCache        // each goods' bucket count
	dry        *dryBuckets         // buckets lately found without stock
	stock      *stockSums          // the buckets' remaining as last seen, for stock events
	trips      *trips              // grabs of goods with several buckets and their round trips
	acks       *ackJournal         // the orders this process acknowledged lately (phantoms.go)
	memos      *saleMemos          // refusals answered from memory (refusals.go)
	batches    *grabBatcher        // concurrent grabs of a bucket share a call (grab_batch.go); nil: each its own
}

// Ledger keeps the orders.
type Ledger struct {
	*Sale
}

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

// Fair is fair sales.
type Fair struct {
	*backend.Backend
	Goods *Service
	// PowKey signs proof-of-work challenges (pow.go); New sets a random key of
	// this process, Main the server's (shared by every process).
	PowKey []byte
	fair   *fairCache // each goods' proof of work and pre-registration, briefly cached (pow.go)
	queues *queues    // this process's view of the waiting rooms (queue.go)
}

// New returns the goods service over b with defaults filled in.
func New(b *backend.Backend) *Service {
	sale := &Sale{Backend: b, OrderTTL: 30 * time.Minute, liveLoads: new(singleflight.Group),
		shards: new(shardsCache), dry: new(dryBuckets), stock: new(stockSums), trips: new(trips), acks: new(ackJournal), memos: new(saleMemos),
		batches: new(grabBatcher)}
	return &Service{Ledger: &Ledger{Sale: sale}, merchantsOf: new(merchants)}
}

// NewFair returns fair sales over goods g, plugged into g: its grabs pass
// the fair sale's gate, and it is told of goods created and changed.
func NewFair(g *Service) *Fair {
	f := &Fair{Backend: g.Backend, Goods: g, fair: newFairCache(), queues: newQueues(), PowKey: randomKey()}
	g.Gate, g.Fair = f, f
	return f
}
