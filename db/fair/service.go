// Package fair is fair sales, an area of its own in front of the goods'
// grab: the waiting room (queue*.go), raffles (the raffle package, embedded),
// the proof of work (pass.go) and pre-registration (fair.go); the rules
// anyone can recompute are in the verify package. The goods are built with
// it (goods.New(b, fair.Over(b, ...))): its Check is a stage of their
// grab (sale.Stage), and it is told of goods created and changed; the sale
// core knows nothing of queues or raffles.
package fair

import (
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/fair/raffle"
	"github.com/seckill/seckill/db/goods"
)

// Service is fair sales: the waiting room, raffles, the proof of work and pre-registration.
type Service struct {
	*backend.Backend
	Goods *goods.Service
	// PowKey signs proof-of-work challenges (pass.go); New sets a random key of
	// this process, Main the server's (shared by every process).
	PowKey []byte
	// Floor is the least proof of work asked of every goods' grab, entry
	// and join (a steering switch; nil: none): goods whose merchant asks
	// less, or none, ask this much. Whoever changes what it answers tells
	// Quiet().Changed().
	Floor func() int
	// SalePaused tells whether the steering switches pause the sale (nil:
	// never): an automatic waiting room then admits nobody, so no
	// admission runs out while grabs are refused (queue_tick.go).
	SalePaused func() bool
	// Raffles are the raffles: entries pass this service's Admit; their
	// methods (EnterRaffle, RaffleDraw, DrawRaffle, …) and Beacon are this
	// service's.
	*raffle.Raffles
	fair   *fairCache   // each goods' proof of work and pre-registration, briefly cached (fair.go)
	queues *queues      // this process's view of the waiting rooms (queue.go)
	quiet  *goods.Quiet // goods whose grabs ask nothing of Check for now (fair.go)
}

// New returns fair sales over the goods g, built over b (g is not read
// before goods.New returns): goods.New(b, func(g *goods.Service)
// goods.FairSales { return fair.New(b, g) }) builds both.
func New(b *backend.Backend, g *goods.Service) *Service {
	f := &Service{Backend: b, Goods: g, fair: newFairCache(), queues: newQueues(), quiet: new(goods.Quiet), PowKey: randomKey()}
	f.Raffles = raffle.New(b, g, f.Admit, f.powKey)
	return f
}

// Open returns goods over b and fair sales built with them (New).
func Open(b *backend.Backend) (*goods.Service, *Service) {
	var f *Service
	g := goods.New(b, func(g *goods.Service) goods.FairSales { f = New(b, g); return f })
	return g, f
}

// Fork is this service on other goods over b (another process's, in
// tests): its own raffles over them, the same key and caches otherwise;
// goods.New(b, s.Fork(b)) builds them.
func (s *Service) Fork(b *backend.Backend) func(*goods.Service) goods.FairSales {
	return func(g *goods.Service) goods.FairSales {
		f := *s
		f.Backend, f.Goods = b, g
		f.quiet = new(goods.Quiet) // the goods that process's engine passes Check by for
		f.Raffles = raffle.New(b, g, f.Admit, f.powKey)
		f.Raffles.Beacon = s.Beacon
		return &f
	}
}
