package goods

import "github.com/seckill/seckill/db/backend"

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

// NewFair returns fair sales over goods g, plugged into g: its grabs pass
// the fair sale's gate, and it is told of goods created and changed.
func NewFair(g *Service) *Fair {
	f := &Fair{Backend: g.Backend, Goods: g, fair: newFairCache(), queues: newQueues(), PowKey: randomKey()}
	g.Gate, g.Fair = f, f
	return f
}
