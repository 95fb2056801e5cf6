package rdb

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// releaseOwnedScript deletes a key only while it still holds the owner's
// token: a lock holder that outlived the TTL must not free the lock another
// has taken since.
//
// KEYS[1] the key
// ARGV[1] the owner's token
// Returns 1 when deleted, 0 when the key had expired or another owner holds it.
var releaseOwnedScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// ReleaseOwned deletes key if it still holds owner (compare-and-delete) and
// reports whether it did; locks and claims taken with SET NX are released with it.
func ReleaseOwned(ctx context.Context, rdb redis.UniversalClient, key, owner string) (bool, error) {
	n, err := releaseOwnedScript.Run(ctx, rdb, []string{key}, owner).Int()
	return n == 1, err
}

// TakeOwned sets key to owner for ttl unless it is set (SET NX GET), and
// reports whether owner holds it now: set here, or found holding owner.
// The second case is go-redis sending the SET again after a reply lost to
// a timeout (a busy node, a cluster's 1 s read timeout): the claim it
// finds is its own, not another owner's, so an owner token must be unique
// to each taker. A claim taken with it is released with ReleaseOwned.
func TakeOwned(ctx context.Context, c redis.UniversalClient, key, owner string, ttl time.Duration) (bool, error) {
	held, err := c.SetArgs(ctx, key, owner, redis.SetArgs{Mode: "NX", Get: true, TTL: ttl}).Result()
	if errors.Is(err, redis.Nil) {
		return true, nil
	}
	return err == nil && held == owner, err
}
