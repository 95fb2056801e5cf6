package rdb

import (
	"context"
	"fmt"
	"time"

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

// PerDatabase is name (a pub/sub channel's, or a key's that must not be
// shared) for the logical database c uses: name itself on database 0 (and a
// Redis Cluster), name:N on database N (pub/sub is server-wide, so processes
// on two databases of one server would hear each other's messages otherwise).
func PerDatabase(c redis.UniversalClient, name string) string {
	if c, ok := c.(*redis.Client); ok && c.Options().DB != 0 {
		return fmt.Sprintf("%s:%d", name, c.Options().DB)
	}
	return name
}

// Follower keeps something a process holds in memory current with the
// messages of one channel (PerDatabase): Follow subscribes and returns once
// Redis has confirmed, so nothing published afterwards is missed; Run
// hands each message to Message until its ctx ends or Close; and, since a
// message sent while the connection was down is lost for good, it calls
// Gap on each resubscription (go-redis resubscribes after a reconnect) and
// Tick every Every as the backstop of what no message said.
type Follower struct {
	Message func(payload string)
	Gap     func()
	Every   time.Duration // 0: no Tick
	Tick    func(ctx context.Context)

	ps *redis.PubSub
}

// Follow subscribes to channel through c (named as PerDatabase names it).
func Follow(ctx context.Context, c redis.UniversalClient, channel string) (*Follower, error) {
	ps := c.Subscribe(ctx, PerDatabase(c, channel))
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, fmt.Errorf("subscribe to %s: %w", channel, err)
	}
	return &Follower{ps: ps}, nil
}

// Run follows the channel until ctx ends or Close: the loop a lifecycle.Loop runs.
func (f *Follower) Run(ctx context.Context) {
	var tick <-chan time.Time
	if f.Every > 0 && f.Tick != nil {
		t := time.NewTicker(f.Every)
		defer t.Stop()
		tick = t.C
	}
	ch := f.ps.ChannelWithSubscriptions()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			f.Tick(ctx)
		case m, ok := <-ch:
			if !ok {
				return
			}
			switch m := m.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" && f.Gap != nil {
					f.Gap()
				}
			case *redis.Message:
				if f.Message != nil {
					f.Message(m.Payload)
				}
			}
		}
	}
}

// Close ends the subscription (and so Run).
func (f *Follower) Close() error { return f.ps.Close() }
