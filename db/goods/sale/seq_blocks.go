package sale

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/backend"
)

// Order IDs never repeat, even when Redis loses a bucket (a node restarted
// without persistence and without a replica): the grab script issues a
// bucket's sequences only up to a ceiling (the info hash's "ceil") that the
// durable store recorded first (id_ceilings, kind goods, part the bucket:
// db/backend/ceilings.go). A bucket loaded again starts above the recorded
// ceiling, so above every sequence it may have issued, acknowledged or not,
// flushed or not. The ceiling moves up a block at a time; a grab that meets
// it answers "reserve", and the grab reserves the next block and runs again
// (one SQL write per block, not per grab).
//
// A failover must not roll the sequences back either. A replica promoted
// after its master died may lack the master's last writes (REDIS_WAIT_REPLICAS
// 0, or a WAIT that fell short), the bucket's sequence among them, and would
// issue again numbers already acknowledged. So on a Redis Cluster each bucket
// records the node that issues its sequences (info "node", CLUSTER MYID, set
// by the load and the grab scripts); a grab that runs on another node (a
// promoted replica, a slot moved) skips the rest of the reserved block,
// which the old node may have issued, and answers "moved": the next block
// is reserved above it before any number is issued here. Order numbers jump
// by up to a block at a failover, and never repeat. (A single Redis server
// has no node ID to compare: it has no replica to fail over to.)

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

// raiseCeilScript raises a loaded bucket's sequence ceiling, never lowers it.
//
// KEYS[1] the bucket's info hash
// ARGV[1] the ceiling the durable store recorded
// Returns the bucket's ceiling now, or -1 when the bucket is not loaded.
var raiseCeilScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local c = tonumber(redis.call('HGET', KEYS[1], 'ceil')) or 0
if c < tonumber(ARGV[1]) then
	redis.call('HSET', KEYS[1], 'ceil', ARGV[1])
	return tonumber(ARGV[1])
end
return c
`)

// extendSeqs reserves the next block of bucket b above the sequences it has
// issued, then raises its ceiling in Redis: a grab that met the ceiling.
func (s *Sale) extendSeqs(ctx context.Context, b Bucket) error {
	seq, err := s.Redis.Get(ctx, SeqKey(b)).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read the order sequence of goods %d bucket %d: %w", b.Goods, b.N, err)
	}
	c, err := s.reserveSeqs(ctx, b, seq+s.seqBlock())
	if err != nil {
		return err
	}
	if c <= seq {
		return fmt.Errorf("goods %d bucket %d: its order sequences are used up", b.Goods, b.N)
	}
	if err := raiseCeilScript.Run(ctx, s.Redis, []string{InfoKey(b)}, c).Err(); err != nil {
		return fmt.Errorf("raise the sequence ceiling of goods %d bucket %d: %w", b.Goods, b.N, err)
	}
	return nil
}
