package rdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/rdb"
)

// setSentTwice sends every SET twice, the first reply dropped: what
// go-redis does when a reply is lost to a timeout and it sends the command
// again.
type setSentTwice struct{}

func (setSentTwice) DialHook(next redis.DialHook) redis.DialHook { return next }
func (setSentTwice) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (setSentTwice) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "set" {
			next(ctx, cmd) // its reply lost
		}
		return next(ctx, cmd)
	}
}

// A claim whose SET go-redis sent again finds itself the owner; another
// owner is refused until it is released, then takes it.
func TestTakeOwnedSentAgainIsItsOwn(t *testing.T) {
	ctx := context.Background()
	r := dbtest.Redis(t)
	c := r.Client
	c.AddHook(setSentTwice{})
	if ok, err := rdb.TakeOwned(ctx, c, "{t}:lock", "a", time.Minute); !ok || err != nil {
		t.Fatalf("a free claim, its SET sent twice: %v %v, want taken", ok, err)
	}
	if ok, err := rdb.TakeOwned(ctx, c, "{t}:lock", "b", time.Minute); ok || err != nil {
		t.Fatalf("a claim another owner holds: %v %v, want refused", ok, err)
	}
	if ok, err := rdb.ReleaseOwned(ctx, c, "{t}:lock", "a"); !ok || err != nil {
		t.Fatalf("release by its owner: %v %v", ok, err)
	}
	if ok, err := rdb.TakeOwned(ctx, c, "{t}:lock", "b", time.Minute); !ok || err != nil {
		t.Fatalf("a released claim: %v %v, want taken", ok, err)
	}
	if ttl := c.PTTL(ctx, "{t}:lock").Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("the claim lasts %s, want at most a minute", ttl)
	}
}
