// Package orders is the order ledger of seckill goods: pay, cancel and
// refund (Lua scripts on the sale's keys: orders.go, checkout.go), the
// expiry tick (expiry.go), the orders' flush to the durable store and its
// conflicts (flush.go), order reads (order_reads.go), stats (stats.go) and
// the orders a Redis failure took after they were acknowledged (phantoms.go).
package orders

import (
	"sync/atomic"

	"github.com/seckill/seckill/db/goods/internal/sale"
)

// Ledger keeps the orders the sale made: their payment, end and durable record.
type Ledger struct {
	*sale.Sale

	phantoms atomic.Int64 // phantom wins this process found and failed (phantoms.go)

	betweenReads func() // tests: run by MyOrders between its read of Redis and its read of the store
}
