package sale

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/backend"
)

// Order IDs never repeat, even when Redis loses a bucket or fails over: a
// bucket's order sequences are one run of db/backend/ceilings.go's issue
// ceilings (kind goods, part the bucket), the info hash's "ceil" and "node"
// its Redis half. The grab script answers "reserve" at the ceiling and
// "moved" on another node (skipping the rest of the block: load.go's
// saleInfo); the load starts above the durable ceiling.

// DefaultSeqBlock is how many order sequences a bucket reserves at a time.
const DefaultSeqBlock = 100_000

// seqBlock is the service's block size (SeqBlock, else DefaultSeqBlock).
func (s *Sale) seqBlock() int64 {
	if s.SeqBlock > 0 {
		return s.SeqBlock
	}
	return DefaultSeqBlock
}

// seqRun is bucket b's run of order sequences in the durable store.
func seqRun(b Bucket) backend.IDRun {
	return backend.IDRun{Kind: backend.GoodsOrders, Item: b.Goods, Part: int64(b.N)}
}

// reserveSeqs records that bucket b may issue sequences up to ceiling (kept
// inside the bucket's range; never lowered) and returns the ceiling recorded.
func (s *Sale) reserveSeqs(ctx context.Context, b Bucket, ceiling int64) (int64, error) {
	_, hi := bucketIDs(b.Goods, b.N)
	c, err := s.RaiseIssueCeiling(ctx, seqRun(b), min(ceiling, hi%OrderSeqSpan))
	if err != nil {
		return 0, fmt.Errorf("reserve order sequences of goods %d bucket %d: %w", b.Goods, b.N, err)
	}
	return c, nil
}

// reservedSeqs is the ceiling recorded for bucket b (0: none yet).
func (s *Sale) reservedSeqs(ctx context.Context, b Bucket) (int64, error) {
	return s.IssueCeiling(ctx, seqRun(b))
}

// seqIssuer is bucket b's run of order sequences: its next sequence is
// the bucket's seq key; a move skips what is below the durable ceiling.
func (s *Sale) seqIssuer(b Bucket) backend.IDIssuer {
	_, hi := bucketIDs(b.Goods, b.N)
	return backend.IDIssuer{
		Run:   seqRun(b),
		What:  fmt.Sprintf("order sequences of goods %d bucket %d", b.Goods, b.N),
		Block: s.seqBlock(),
		Next: func(ctx context.Context, _ int64) (int64, int64, bool, error) {
			seq, err := s.Redis.Get(ctx, SeqKey(b)).Int64()
			if err != nil && !errors.Is(err, redis.Nil) {
				return 0, 0, false, fmt.Errorf("read the order sequence of goods %d bucket %d: %w", b.Goods, b.N, err)
			}
			return seq, hi % OrderSeqSpan, true, nil
		},
		Resync: seqResyncScript,
		Keys:   []string{InfoKey(b), SeqKey(b)},
	}
}

// seqResyncScript raises a loaded bucket's sequence ceiling (backend.CeilingScript).
//
// KEYS[1] the bucket's info hash, KEYS[2] its sequence
var seqResyncScript = backend.CeilingScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_loaded' end`, `
		if (tonumber(redis.call('GET', KEYS[2])) or 0) < tonumber(ARGV[1]) then redis.call('SET', KEYS[2], ARGV[1]) end`)

// extendSeqs reserves the next block of bucket b above the sequences it has
// issued, then raises its ceiling in Redis: a grab that met the ceiling, or
// ran on another node (the grab script moved the bucket's node already).
func (s *Sale) extendSeqs(ctx context.Context, b Bucket) error {
	c, seq, err := s.ReserveIDs(ctx, s.seqIssuer(b), false)
	if err != nil {
		return err
	}
	if c <= seq {
		return fmt.Errorf("goods %d bucket %d: its order sequences are used up", b.Goods, b.N)
	}
	return nil
}
