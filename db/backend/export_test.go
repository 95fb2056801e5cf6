package backend

import "context"

// StaleLease returns ctx under a fencing number of q's lane of its own, as
// the lane's lease holder has it, without the Redis lease: a test takes two
// and runs the older one's flush as a flusher that came back after its
// successor started.
func StaleLease(ctx context.Context, b *Backend, q FlushQueue) (context.Context, error) {
	fence, err := b.nextFence(ctx, q.Pending)
	if err != nil {
		return nil, err
	}
	return context.WithValue(ctx, leaseKey{}, &lease{lane: q.Pending, token: "test", fence: fence}), nil
}

// ReleaseBatch is the compare-and-delete of a flushed batch's processing list.
func (b *Backend) ReleaseBatch(ctx context.Context, q FlushQueue, recs []string) error {
	return b.releaseBatch(ctx, q, recs)
}

// ErrLeaseLost ends a flush whose lane's lease passed to another flusher.
var ErrLeaseLost = errLeaseLost
