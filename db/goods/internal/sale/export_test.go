package sale

// Doors into the sale for its own behaviour tests (package sale_test):
// what the product never reaches from outside the sale (the batches' count,
// a grab's load of missing goods, a replica's roll-back played, sale changes
// never heard). Compiled only into this package's tests.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
)

// GrabBatches is how many batch calls ran and the grabs they decided.
func (s *Sale) GrabBatches() (calls, grabs int64) {
	return s.batches.calls.Load(), s.batches.grabs.Load()
}

// OnLiveLoad calls f each time a grab's load of missing goods starts reading SQLite.
func (s *Sale) OnLiveLoad(f func(goodsID int64)) { s.onLiveLoad = f }

// RollBackAsPromotedReplica leaves goods bucket n (of k) as a replica that
// lagged behind its master and was promoted holds it: the order sequence
// back at seq, and the bucket recorded as issued by another node (the dead
// master's ID).
func (s *Sale) RollBackAsPromotedReplica(ctx context.Context, goodsID int64, n, k int, seq int64) error {
	b := Bucket{Goods: goodsID, N: n, K: k}
	if err := s.Redis.Set(ctx, SeqKey(b), seq, 0).Err(); err != nil {
		return err
	}
	return s.Redis.HSet(ctx, InfoKey(b), "node", "0123456789abcdef0123456789abcdef01234567").Err()
}

// NextSalePoll is closed when the next poll of the goods' 'back' counters
// (pollSales) ends, or the one under way: a poll that starts after a
// change is sure to have read it.
func (s *Sale) NextSalePoll() <-chan struct{} {
	s.memos.pollMu.Lock()
	defer s.memos.pollMu.Unlock()
	if s.memos.polled == nil {
		s.memos.polled = make(chan struct{})
	}
	return s.memos.polled
}

// MuteSaleChanges stops announcing sale changes to other processes, as if
// every message were lost: they must find out by their poll.
func (s *Sale) MuteSaleChanges() { s.memos.mute.Store(true) }

// IsDecision reports whether cmd runs decideScript (EVALSHA, or EVAL with
// its source): a grab decided in Redis, not another room's script.
func IsDecision(cmd interface{ Args() []any }) bool {
	a := cmd.Args()
	if len(a) < 2 {
		return false
	}
	arg, _ := a[1].(string)
	if arg == decideScript.Hash() {
		return true
	}
	sum := sha1.Sum([]byte(arg))
	return hex.EncodeToString(sum[:]) == decideScript.Hash()
}
