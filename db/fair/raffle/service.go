// Package raffle is the raffle (goods in mode raffle), a room of fair
// sales: shoppers enter from the goods' entry_start_at to its sale's start;
// when entries close the entrants are committed in a Merkle root; at the
// start the draw orders them by randomness mixed from a sealed seed, that
// root and, where configured, a public beacon's round (db/fair/verify has
// the public rules), and the first stock of them get an unpaid order each,
// made by the ordinary grab on their behalf. The store holds the raffle: the
// sealed seed, the entries, the root and the draw's result; Redis only the
// orders, as for any goods. Fair sales (db/fair) embed it: its methods are
// theirs.
package raffle

import (
	"context"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// Raffles is the raffles of goods.
type Raffles struct {
	*backend.Backend
	Goods *goods.Service
	// Admit is the fair sale's gate an entry passes first (the proof of work, pre-registration).
	Admit func(ctx context.Context, userID, goodsID int64, pow string) error
	// Key is the server's key: the seeds are sealed under a key derived from it (seal.go).
	Key func() []byte
	// Beacon is the public randomness mixed into draws (RAFFLE_BEACON_URL; nil: none).
	Beacon *verify.Beacon
	trees  *treeCache // frozen entries trees, for entries' proofs (root.go)
}

// New returns the raffles of goods g, entries passing admit.
func New(b *backend.Backend, g *goods.Service, admit func(ctx context.Context, userID, goodsID int64, pow string) error, key func() []byte) *Raffles {
	return &Raffles{Backend: b, Goods: g, Admit: admit, Key: key, trees: &treeCache{}}
}

// Open opens a raffle's entries (its seed hash is published from now on):
// goods creation calls it.
func (s *Raffles) Open(ctx context.Context, g *model.Goods) error { return s.openRaffle(ctx, g) }
