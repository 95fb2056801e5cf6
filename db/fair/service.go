// Package fair is fair sales, an area of its own in front of the goods'
// grab: the waiting room (queue*.go), raffles (the raffle package, embedded),
// the proof of work (pow.go) and pre-registration (fair.go); the rules
// anyone can recompute are in the verify package. It plugs into the sale
// through its Gate (sale.Gate, Pass): the sale core knows nothing of queues
// or raffles.
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
	// PowKey signs proof-of-work challenges (pow.go); New sets a random key of
	// this process, Main the server's (shared by every process).
	PowKey []byte
	// Floor is the least proof of work asked of every goods' grab, entry
	// and join (a steering switch; nil: none): goods whose merchant asks
	// less, or none, ask this much.
	Floor func() int
	// SalePaused tells whether the steering switches pause the sale (nil:
	// never): an automatic waiting room then admits nobody, so no
	// admission runs out while grabs are refused (queue_tick.go).
	SalePaused func() bool
	// Raffles are the raffles: entries pass this service's Admit; their
	// methods (EnterRaffle, RaffleDraw, DrawRaffle, …) and Beacon are this
	// service's.
	*raffle.Raffles
	fair   *fairCache // each goods' proof of work and pre-registration, briefly cached (pow.go)
	queues *queues    // this process's view of the waiting rooms (queue.go)
}

// New returns fair sales over goods g, plugged into g: its grabs pass
// the fair sale's gate, and it is told of goods created and changed.
func New(g *goods.Service) *Service {
	f := &Service{Backend: g.Backend, Goods: g, fair: newFairCache(), queues: newQueues(), PowKey: randomKey()}
	f.Raffles = raffle.New(g, f.Admit, f.powKey)
	g.Gate, g.Fair = f, f
	return f
}

// Fork is this service on other goods (another process's, in tests): its
// own raffles over them, the same key and caches otherwise.
func (s *Service) Fork(g *goods.Service) *Service {
	f := *s
	f.Backend, f.Goods = g.Backend, g
	f.Raffles = raffle.New(g, f.Admit, f.powKey)
	f.Raffles.Beacon = s.Beacon
	g.Gate, g.Fair = &f, &f
	return &f
}
