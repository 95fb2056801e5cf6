package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Publish sends message to the subscribers of channel through c, a client or
// a pipeline. On a Redis Cluster it goes to the node that owns the slot the
// channel's name hashes to, as a key would: PUBLISH names no key, so go-redis
// sends each one to any node, and messages entering the cluster at different
// nodes may reach a subscriber out of order (a stale stock after the last).
func Publish(ctx context.Context, c interface {
	Process(context.Context, redis.Cmder) error
}, channel string, message any) *redis.IntCmd {
	cmd := redis.NewIntCmd(ctx, "publish", channel, message)
	cmd.SetFirstKeyPos(1)
	_ = c.Process(ctx, cmd)
	return cmd
}
