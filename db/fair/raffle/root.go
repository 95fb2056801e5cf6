package raffle

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
)

// An entry's proof that it is in its raffle's entries root (merkle.go).
// The root is frozen when entries close and never changes after, so each
// process builds a raffle's tree once and keeps the last few.

// treeCacheSize is how many raffles' trees a process keeps.
const treeCacheSize = 8

type entriesTree struct {
	root  string
	users []int64 // ascending: the leaves' order
	tree  *verify.Merkle
}

type treeCache struct {
	mu sync.Mutex
	m  map[int64]*entriesTree
}

func (c *treeCache) get(goodsID int64, root string) *entriesTree {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.m[goodsID]; t != nil && t.root == root {
		return t
	}
	return nil
}

func (c *treeCache) put(goodsID int64, t *entriesTree) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= treeCacheSize {
		c.m = map[int64]*entriesTree{}
	}
	c.m[goodsID] = t
}

// inclusion returns the user's leaf and proof in the raffle's frozen
// entries root (nil when the user is not among its entries).
func (s *Raffles) inclusion(ctx context.Context, goodsID int64, root string, userID int64) (*model.Inclusion, error) {
	t := s.trees.get(goodsID, root)
	if t == nil {
		users, err := sqldb.IDs(ctx, s.SQL.R, `SELECT user_id FROM raffle_entries WHERE goods_id = ? ORDER BY user_id`, goodsID)
		if err != nil {
			return nil, err
		}
		t = &entriesTree{root: root, users: users, tree: verify.EntriesTree(goodsID, users)}
		if got := t.tree.RootHex(); got != root {
			return nil, fmt.Errorf("raffle %d: its entries make root %s, not the frozen %s", goodsID, got, root)
		}
		s.trees.put(goodsID, t)
	}
	i, ok := slices.BinarySearch(t.users, userID)
	if !ok {
		return nil, nil
	}
	leaf := t.tree.Leaf(i)
	return &model.Inclusion{Leaf: fmt.Sprintf("%x", leaf[:]), Proof: t.tree.Proof(i)}, nil
}
