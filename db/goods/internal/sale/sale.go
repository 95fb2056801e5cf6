// Package sale is the sale core of seckill goods: a goods' stock in Redis
// buckets (shards.go, keys.go), loaded once before its sale (load.go), the
// grab decided by one entrance, Decide, in one Redis script, batched
// (engine.go: the stages, the refusal memo's check, the route to the home
// bucket, the script), what the script's reply says (reply.go), what the
// refusal memo learns and how it is kept current (refusals.go), the
// raffle's award and the bench's bare call (doors.go), order sequences
// reserved in blocks (seq_blocks.go), the order record Lua and Go share
// (record.go) and the live events of a win (events.go). Before a grab reaches Redis it passes the stages the sale
// was built with (fair sales hand theirs in); it knows nothing of queues
// or raffles.
package sale

import (
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/db/backend"
	"golang.org/x/sync/singleflight"
)

// Sale decides grabs in Redis: the goods' stock, units and order sequences.
type Sale struct {
	*backend.Backend
	// OrderTTL is how long an order may stay unpaid.
	OrderTTL time.Duration
	// SeqBlock is how many order sequences a bucket reserves in the durable
	// store at a time (seq_blocks.go); 0: DefaultSeqBlock.
	SeqBlock int64
	// Stock is told of every stock change this process makes, before the
	// change is published (the goods' catalog: a shopper reads their own
	// grab at once); nil: nobody. It must not block.
	Stock func(StockEvent)

	liveLoads  *singleflight.Group // one load at a time of goods grabs found missing; nil: each grab loads
	onLiveLoad func(goodsID int64) // tests: called as a load starts reading the store
	shards     *shardsCache        // each goods' bucket count
	dry        *dryBuckets         // buckets lately found without stock
	stock      *stockSums          // the buckets' remaining as last seen, for stock events
	trips      *trips              // grabs of goods with several buckets and their round trips
	Acks       *ackJournal         // the orders this process acknowledged lately (journal.go; the ledger's phantoms.go reads it)
	memos      *saleMemos          // refusals answered from memory (refusals.go)
	batches    *grabBatcher        // concurrent grabs of a bucket share a call (engine.go); nil: each its own
	stages     []Stage             // what a grab passes before the refusal memo, in order (NewSale)
	quiet      []*Quiet            // each stage's goods with nothing to check (nil: it names none)
	admitted   atomic.Int64        // grabs past the stages before the memo (Admitted)
}

// NewSale returns the sale over b with defaults filled in. A grab passes
// its stages in this order: the sale's pause (db.WithHeldRefusal), the
// admission stages given (fair sales: the sale mode, the proof of work,
// pre-registration, the waiting room's admission; a Quieting stage is
// passed by for the goods it marked), then the refusal memo (memoCheck),
// which answers from memory what Redis would answer.
func NewSale(b *backend.Backend, admission ...Stage) *Sale {
	s := &Sale{Backend: b, OrderTTL: 30 * time.Minute, liveLoads: new(singleflight.Group),
		shards: new(shardsCache), dry: new(dryBuckets), stock: new(stockSums), trips: new(trips), Acks: new(ackJournal), memos: new(saleMemos)}
	s.batches = newGrabBatcher(s)
	s.stages = append([]Stage{paused{}}, admission...)
	s.quiet = make([]*Quiet, len(s.stages))
	for i, st := range s.stages {
		if q, ok := st.(Quieting); ok {
			s.quiet[i] = q.Quiet()
		}
	}
	return s
}
