// Package goods is seckill goods in time slots and the orders grabbed from
// them: slots and goods in the store, the sale in Redis (one Lua script per
// grab, pay, cancel and expiry, every key of one goods under its hash tag),
// the batch flush of orders to the store, the stock sync, preheat and the sweep
// of overdue orders, and the demo seeding. Plain types live in db/model.
package goods

import (
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill/db/backend"
)

// Service sells goods: it decides grabs in Redis, keeps the durable record
// in the store, and expires unpaid orders on a periodic tick (expiry.go).
type Service struct {
	*backend.Backend
	// OrderTTL is how long an order may stay unpaid.
	OrderTTL time.Duration
	// SeqBlock is how many order sequences a bucket reserves in the durable
	// store at a time (seq_blocks.go); 0: DefaultSeqBlock.
	SeqBlock int64

	liveLoads   *singleflight.Group // one load at a time of goods grabs found missing; nil: each grab loads
	onLiveLoad  func(goodsID int64) // tests: called as a load starts reading the store
	merchantsOf *merchants          // the merchant of each sampled goods (nil: asked each time)
	shards      *shardsCache        // each goods' bucket count
	dry         *dryBuckets         // buckets lately found without stock
	stock       *stockSums          // the buckets' remaining as last seen, for stock events
	trips       *trips              // grabs of goods with several buckets and their round trips
	acks        *ackJournal         // the orders this process acknowledged lately (phantoms.go)
	memos       *saleMemos          // refusals answered from memory (refusals.go)
	batches     *grabBatcher        // concurrent grabs of a bucket share a call (grab_batch.go); nil: each its own

	// PowKey signs proof-of-work challenges (pow.go); New sets a random key of
	// this process, Main the server's (shared by every process).
	PowKey []byte
	fair   *fairCache // each goods' proof of work and pre-registration, briefly cached (pow.go)
	queues *queues    // this process's view of the waiting rooms (queue.go)
}

// New returns the goods service over b with defaults filled in.
func New(b *backend.Backend) *Service {
	s := &Service{Backend: b, OrderTTL: 30 * time.Minute, liveLoads: new(singleflight.Group), merchantsOf: new(merchants),
		shards: new(shardsCache), dry: new(dryBuckets), stock: new(stockSums), trips: new(trips), acks: new(ackJournal), memos: new(saleMemos),
		fair: newFairCache(), queues: newQueues(), PowKey: randomKey()}
	s.batches = newGrabBatcher(s)
	return s
}
