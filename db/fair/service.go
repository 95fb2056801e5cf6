// Package fair is fair sales, an area of its own in front of the goods'
// grab: the waiting room (queue*.go), raffles (raffle*.go), the proof of
// work (pow.go) and pre-registration (fair.go). It plugs into the sale
// through its Gate (sale.Gate, Pass): the sale core knows nothing of queues
// or raffles.
package fair

import (
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/goods"
)

// Service is fair sales: the waiting room, raffles, the proof of work and pre-registration.
type Service struct {
	*backend.Backend
	Goods *goods.Service
	// PowKey signs proof-of-work challenges (pow.go); New sets a random key of
	// this process, Main the server's (shared by every process).
	PowKey []byte
	// Beacon is the public randomness mixed into raffle draws
	// (RAFFLE_BEACON_URL; nil: none), raffle_beacon.go.
	Beacon *verify.Beacon
	fair   *fairCache // each goods' proof of work and pre-registration, briefly cached (pow.go)
	queues *queues    // this process's view of the waiting rooms (queue.go)
	trees  *treeCache // raffles' frozen entries trees, for entries' proofs (raffle_root.go)
}

// New returns fair sales over goods g, plugged into g: its grabs pass
// the fair sale's gate, and it is told of goods created and changed.
func New(g *goods.Service) *Service {
	f := &Service{Backend: g.Backend, Goods: g, fair: newFairCache(), queues: newQueues(), trees: &treeCache{}, PowKey: randomKey()}
	g.Gate, g.Fair = f, f
	return f
}
