package wshub

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/live"
)

// Receiving from Redis: the broadcast channel every process follows, and the
// user buckets (live.UserChannel) this process follows while it holds a
// socket of one of their users, so a user's events reach only the process
// that holds the user's socket (hub.go has the hub, hub_conn.go the sockets).

// buckets counts this process's sockets per user bucket and keeps the
// subscriptions to the buckets that have any.
type buckets struct {
	h       *Hub
	sharded bool // a cluster: SSUBSCRIBE, one connection per shard
	names   [live.UserBuckets]string

	mu      sync.Mutex
	refs    map[int]int           // bucket → sockets here
	ready   map[int]chan struct{} // bucket → closed once Redis confirmed its subscription
	waiting map[string][]chan struct{}
	conns   map[string]*redis.PubSub // on a cluster: master address → the subscriptions on it
	perConn map[string]int           // master address → buckets followed there
	closed  bool
}

// subscribeWait bounds how long a socket's upgrade waits for Redis to confirm
// its user's bucket; past it the socket opens anyway (events before the
// confirmation may be missed, as with a Redis outage).
const subscribeWait = 5 * time.Second

func newBuckets(h *Hub) *buckets {
	b := &buckets{h: h, sharded: live.Sharded(h.Redis), refs: map[int]int{}, ready: map[int]chan struct{}{},
		waiting: map[string][]chan struct{}{}, conns: map[string]*redis.PubSub{}, perConn: map[string]int{}}
	for i := range b.names {
		b.names[i] = live.UserChannel(h.Redis, i)
	}
	return b
}

// hold counts a socket of userID and returns once this process follows the
// user's bucket, so every event published afterwards reaches it.
func (b *buckets) hold(ctx context.Context, userID int64) {
	k := live.UserBucket(userID)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.refs[k]++
	if b.refs[k] == 1 {
		ready := make(chan struct{})
		b.ready[k] = ready
		if err := b.subscribeLocked(ctx, b.names[k], ready); err != nil {
			b.h.Log.Warn("subscribe to user bucket", "channel", b.names[k], "err", err)
		}
	}
	ready := b.ready[k]
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, subscribeWait)
	defer cancel()
	select {
	case <-ready:
	case <-ctx.Done():
		b.h.Log.Warn("user bucket subscription not confirmed in time", "channel", b.names[k])
	}
}

// release uncounts a socket of userID; the last one's bucket is unsubscribed.
func (b *buckets) release(userID int64) {
	k := live.UserBucket(userID)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.refs[k] == 0 {
		return
	}
	if b.refs[k]--; b.refs[k] > 0 {
		return
	}
	delete(b.refs, k)
	delete(b.ready, k)
	ps, addr, err := b.connLocked(context.Background(), b.names[k])
	if err != nil {
		return
	}
	if b.sharded {
		if b.perConn[addr]--; b.perConn[addr] <= 0 {
			// A connection with no channel would reconnect to any node; the
			// next bucket on this master opens a new one.
			delete(b.perConn, addr)
			delete(b.conns, addr)
			delete(b.waiting, b.names[k]) // its only channel: no confirmation comes now
			ps.Close()
			return
		}
		err = ps.SUnsubscribe(context.Background(), b.names[k])
	} else {
		err = ps.Unsubscribe(context.Background(), b.names[k])
	}
	if err != nil && !errors.Is(err, redis.ErrClosed) {
		b.h.Log.Warn("unsubscribe from user bucket", "channel", b.names[k], "err", err)
	}
}

// subscribeLocked asks for channel on its connection; ready is closed when
// Redis confirms. Confirmations of one channel come in the order asked for,
// so each closes the oldest waiter. The caller holds b.mu.
func (b *buckets) subscribeLocked(ctx context.Context, channel string, ready chan struct{}) error {
	ps, addr, err := b.connLocked(ctx, channel)
	if err != nil {
		return err
	}
	fresh := b.sharded && b.perConn[addr] == 0
	if b.sharded {
		b.perConn[addr]++
	}
	b.waiting[channel] = append(b.waiting[channel], ready)
	if !b.sharded {
		return ps.Subscribe(ctx, channel)
	}
	err = ps.SSubscribe(ctx, channel)
	if fresh {
		// Read it only now: the cluster client's pub/sub connects to the
		// master of its first channel's slot, and a read before any channel
		// would connect it to a random node.
		b.h.receivers.Add(1)
		go func() {
			defer b.h.receivers.Done()
			b.h.receive(context.Background(), ps) // until the hub closes ps (buckets.close)
		}()
	}
	return err
}

// connLocked is the connection channel's subscriptions go on, and its
// master's address: on one server the hub's own (with the broadcast
// channel), on a cluster one per master, which must own the channel's slot.
// The caller holds b.mu.
func (b *buckets) connLocked(ctx context.Context, channel string) (*redis.PubSub, string, error) {
	cc, ok := b.h.Redis.(*redis.ClusterClient)
	if !ok {
		return b.h.pubsub, "", nil
	}
	node, err := cc.MasterForKey(ctx, channel)
	if err != nil {
		return nil, "", err
	}
	addr := node.Options().Addr
	if ps := b.conns[addr]; ps != nil {
		return ps, addr, nil
	}
	// The cluster client's pub/sub connects to the master of its first
	// channel's slot, and reconnects there with all its channels.
	ps := cc.SSubscribe(ctx)
	b.conns[addr] = ps
	return ps, addr, nil
}

// confirmed is called when Redis confirms a subscription to channel.
func (b *buckets) confirmed(channel string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.waiting[channel]; len(w) > 0 {
		close(w[0])
		if len(w) == 1 {
			delete(b.waiting, channel)
		} else {
			b.waiting[channel] = w[1:]
		}
	}
}

// close closes the shards' connections (the hub closes its own).
func (b *buckets) close() {
	b.mu.Lock()
	b.closed = true
	conns := b.conns
	b.conns = nil
	b.mu.Unlock()
	for _, ps := range conns {
		ps.Close()
	}
}

// receive reads one connection's messages until it is closed (or, while
// the connection is being replaced, until done ends), delivering events and
// telling bucket subscriptions they are confirmed.
func (h *Hub) receive(done context.Context, ps *redis.PubSub) {
	ctx := context.Background()
	for {
		msg, err := ps.ReceiveTimeout(ctx, time.Minute)
		if err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				ps.Ping(ctx) // a dead connection fails the ping and is replaced
				continue
			}
			// The connection was replaced (with its subscriptions); pause so a Redis outage is not a spin.
			select {
			case <-done.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" || m.Kind == "ssubscribe" {
				h.buckets.confirmed(m.Channel)
			}
			if m.Kind == "subscribe" && m.Channel == h.broadcast && h.Observe != nil {
				h.Observe("", nil) // (re)subscribed: events may have been missed meanwhile
			}
		case *redis.Message:
			if m.Channel != h.broadcast {
				h.userEvents.Add(1)
				h.userEventsSeries.Inc()
			}
			ev, err := live.Decode(m.Payload)
			if err != nil {
				h.Log.Warn("bad live message", "err", err)
				continue
			}
			h.dispatch(ev.Topic, ev.Event)
		}
	}
}

// UserEventsReceived is how many user-bucket messages (users' own events)
// this process has received from Redis: about its share of the users'
// events, those of the users whose sockets it holds.
func (h *Hub) UserEventsReceived() int64 { return h.userEvents.Load() }
