package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/rdb"
)

// The flush lease keeps one flusher at a time across processes, and lets a
// dead or paused one be replaced within FlushLeaseTTL:
//
//  1. A flusher takes the lease (SET NX PX FlushLeaseTTL under a token of
//     its own) and then the next fencing number from the durable store
//     (flush_fences, one UPDATE … RETURNING), so the newest holder always
//     holds the highest number.
//  2. While it works, it renews the lease every third of the TTL; a renewal
//     that finds the lease gone or another's cancels its steps.
//  3. Each batch commits only if its last statement finds the fencing
//     number still the holder's (commitFence). A flusher that comes back
//     after its successor took the lease (a SIGSTOP, a long GC) cannot
//     commit again: the batch it held stays in processing, where the
//     successor found it already. Batches commit in TxQuiet, so a paused
//     flusher's open transaction is ended by the database within the TTL
//     and holds no row its successor needs.
//  4. Releasing the batch's processing list is a compare-and-delete of the
//     batch it applied, and releasing the lease a compare-and-delete of its
//     token: a late flusher frees neither its successor's batch nor lease.
//
// A flush that finds the lease taken returns at once (the holder drains
// every queue) and counts a lease wait.

// FlushLeaseKey holds the flush lease: the token of the flusher at work.
const FlushLeaseKey = "seckill:flush:lease"

// FlushLeaseTTL is how long a lease lasts unless renewed: a flusher that
// died or stopped holding it is replaced within this time.
const FlushLeaseTTL = 2 * time.Second

// FlushStats counts what this process's flushes met; /metrics shows them.
type FlushStats struct {
	LeaseWaits atomic.Int64 // flushes that found the lease held by another flusher
	Takeovers  atomic.Int64 // batches found in processing: left by a flusher that died, stalled or failed
	Fenced     atomic.Int64 // batches refused at commit: a newer lease holder had started
	LastCommit atomic.Int64 // when this process last committed a batch (Unix ms; 0: never)
}

// errLeaseLost ends a flush whose lease passed to another flusher.
var errLeaseLost = errors.New("the flush lease passed to another flusher")

// lease is one holding of the flush lease.
type lease struct {
	token string
	fence int64
}

type leaseKey struct{}

// leaseOf is the lease a flush runs under, nil outside FlushAll.
func leaseOf(ctx context.Context) *lease {
	l, _ := ctx.Value(leaseKey{}).(*lease)
	return l
}

// takeLease takes the flush lease and the next fencing number, or returns
// nil when another flusher holds the lease.
func (b *Backend) takeLease(ctx context.Context) (*lease, error) {
	l := &lease{token: rdb.NewRequestID()}
	ok, err := b.Redis.SetNX(ctx, FlushLeaseKey, l.token, FlushLeaseTTL).Result()
	if err != nil || !ok {
		return nil, err
	}
	if l.fence, err = b.nextFence(ctx); err != nil {
		b.releaseLease(ctx, l)
		return nil, err
	}
	return l, nil
}

// nextFence takes the next fencing number from the durable store.
func (b *Backend) nextFence(ctx context.Context) (int64, error) {
	var fence int64
	err := b.SQL.W.QueryRowContext(ctx, `UPDATE flush_fences SET fence = fence + 1 WHERE name = 'flush' RETURNING fence`).Scan(&fence)
	if err != nil {
		return 0, fmt.Errorf("take a fencing number: %w", err)
	}
	return fence, nil
}

// renewLeaseScript extends the lease while it still holds the owner's token.
//
// KEYS[1] the lease key
// ARGV[1] the owner's token, ARGV[2] the TTL in ms
// Returns 1 when renewed, 0 when the lease ran out or another holds it.
var renewLeaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)

// keepLease renews l every third of the TTL until ctx ends, and calls lost
// (once) when a renewal finds the lease gone or cannot be made.
func (b *Backend) keepLease(ctx context.Context, l *lease, lost func()) {
	t := time.NewTicker(FlushLeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := renewLeaseScript.Run(ctx, b.Redis, []string{FlushLeaseKey}, l.token, FlushLeaseTTL.Milliseconds()).Int()
			if ctx.Err() != nil {
				return
			}
			if err != nil || n != 1 {
				b.Log.Warn("flush lease lost; stopping this flush", "err", err)
				lost()
				return
			}
		}
	}
}

func (b *Backend) releaseLease(ctx context.Context, l *lease) {
	if released, err := rdb.ReleaseOwned(context.WithoutCancel(ctx), b.Redis, FlushLeaseKey, l.token); err != nil || !released {
		b.Log.Warn("flush outlived its lease; its successor fenced it off", "err", err)
	}
}

// commitFence is the last statement of a batch's transaction: it finds the
// fencing number still l's, or refuses the batch (errLeaseLost). Holding the
// row from here to the commit, it also makes a successor's takeLease wait
// for this commit, so a batch either commits before its successor starts
// or not at all.
func commitFence(ctx context.Context, tx *sql.Tx, l *lease) error {
	res, err := tx.ExecContext(ctx, `UPDATE flush_fences SET fence = fence WHERE name = 'flush' AND fence = ?`, l.fence)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return errLeaseLost
	}
	return nil
}

// releaseBatchScript deletes the processing list only while it holds the
// batch the caller applied (the same length, first and last record): a
// flusher that comes back late never frees a batch its successor moved in.
//
// KEYS[1] processing list
// ARGV[1] the batch's first record, ARGV[2] its last, ARGV[3] its length
// Returns 1 when deleted, 0 when processing holds something else.
var releaseBatchScript = redis.NewScript(`
if redis.call('LLEN', KEYS[1]) == tonumber(ARGV[3]) and redis.call('LINDEX', KEYS[1], 0) == ARGV[1]
	and redis.call('LINDEX', KEYS[1], -1) == ARGV[2] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

func (b *Backend) releaseBatch(ctx context.Context, q FlushQueue, recs []string) error {
	return releaseBatchScript.Run(ctx, b.Redis, []string{q.Processing}, recs[0], recs[len(recs)-1], len(recs)).Err()
}
