package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/db/rdb"
)

// Channel is the Redis pub/sub channel every web process listens on.
const Channel = "seckill:live"

// ChannelOf is Channel for the logical database rdb uses. Pub/sub
// ignores the database number, so without it deployments (and parallel
// tests) on different databases of one server would see each other's events.
// A Redis Cluster has only database 0, and delivers a PUBLISH to the
// subscribers of every node.
func ChannelOf(c redis.UniversalClient) string { return rdb.PerDatabase(c, Channel) }

// UserBuckets is how many channels carry users' own events (TopicUser): a
// user's events go to the channel of their bucket, userID mod UserBuckets,
// which only the web processes holding a socket of a user in that bucket
// subscribe to. With W web processes each receives about 1/W of the users'
// events instead of all of them; public topics stay on Channel, which every
// process receives. The count bounds the channels a process may hold.
const UserBuckets = 1024

// UserBucket is the bucket of a user's events.
func UserBucket(userID int64) int { return int(uint64(userID) % UserBuckets) }

// UserChannel is the channel of bucket b's events, on rdb's database (as
// ChannelOf). Its bucket is its hash tag, so on a Redis Cluster the channel
// belongs to one slot and sharded pub/sub (SPUBLISH/SSUBSCRIBE) keeps its
// messages on the shard that owns it.
func UserChannel(rdb redis.UniversalClient, b int) string {
	return fmt.Sprintf("%s:u:{%d}", ChannelOf(rdb), b)
}

// Sharded tells whether user channels use sharded pub/sub: on a Redis
// Cluster. On one server (or the embedded Redis, which lacks SPUBLISH) plain
// PUBLISH/SUBSCRIBE route the same way.
func Sharded(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// channels names the channels of one database: the broadcast one and each bucket's.
type channels struct {
	broadcast string
	user      [UserBuckets]string
	sharded   bool
}

func channelsOf(r redis.UniversalClient) *channels {
	c := &channels{broadcast: ChannelOf(r), sharded: Sharded(r)}
	for b := range c.user {
		c.user[b] = UserChannel(r, b)
	}
	return c
}

// of is the channel a topic travels on, and whether it is a user bucket's.
func (c *channels) of(topic string) (string, bool) {
	if id, ok := strings.CutPrefix(topic, "user:"); ok {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			return c.user[UserBucket(n)], true
		}
	}
	return c.broadcast, false
}

// publish sends one message on the topic's channel through p (a client or a
// pipeline): a user's event to its bucket's shard, SPUBLISH on a cluster.
func (c *channels) publish(ctx context.Context, p interface {
	Process(context.Context, redis.Cmder) error
}, topic string, payload []byte) *redis.IntCmd {
	ch, user := c.of(topic)
	if user && c.sharded {
		cmd := redis.NewIntCmd(ctx, "spublish", ch, payload)
		cmd.SetFirstKeyPos(1)
		_ = p.Process(ctx, cmd)
		return cmd
	}
	return rdb.Publish(ctx, p, ch, payload)
}

// Topic names; a user's own events go to TopicUser and need no subscription.
func TopicGoods(id int64) string     { return "goods:" + strconv.FormatInt(id, 10) }
func TopicSlot(id int64) string      { return "slot:" + strconv.FormatInt(id, 10) }
func TopicRedPacket(id int64) string { return "redpacket:" + strconv.FormatInt(id, 10) }
func TopicCoupon(id int64) string    { return "coupon:" + strconv.FormatInt(id, 10) }
func TopicUser(id int64) string      { return "user:" + strconv.FormatInt(id, 10) }

// TopicMerchant carries a merchant's own figures (the live chart samples);
// the hub puts a merchant's sockets on it, and nobody can subscribe to it.
func TopicMerchant(id int64) string { return fmt.Sprintf("merchant:%d", id) }

// TopicAdmins carries every merchant's figures to admins' sockets, which the
// hub puts on it; nobody can subscribe to it.
const TopicAdmins = "merchant:all"

// Message is what travels over Channel or a user channel: the topic and the
// event as sent to clients. On the wire it is the topic, a newline and the
// event's JSON, so a web process's hub routes it without decoding JSON.
type Message struct {
	Topic string
	Event json.RawMessage
}

// Encode returns the message's wire form. Topics never hold a newline.
func (m Message) Encode() []byte {
	b := make([]byte, 0, len(m.Topic)+1+len(m.Event))
	return append(append(append(b, m.Topic...), '\n'), m.Event...)
}

// Decode reads a message's wire form.
func Decode(payload string) (Message, error) {
	topic, event, ok := strings.Cut(payload, "\n")
	if !ok || topic == "" {
		return Message{}, fmt.Errorf("live message %.40q: no topic line", payload)
	}
	return Message{Topic: topic, Event: json.RawMessage(event)}, nil
}

// CoalesceWindow is the shortest gap between two coalesced events on one topic.
const CoalesceWindow = 100 * time.Millisecond

// Events publishes live events through Redis: public ones to every web
// process, a user's own to the process holding the user's socket.
type Events struct {
	rdb redis.UniversalClient
	ch  *channels

	mu       sync.Mutex
	pending  map[string]keyedEvent // coalescing key → latest event not yet sent
	versions map[string]int64      // coalescing key → newest version seen in the current burst
	timers   map[string]*time.Timer
	window   time.Duration

	out       chan keyedEvent // events on their way to Redis
	closed    bool            // guarded by mu
	publisher *lifecycle.Loop // publishLoop
}

// outBuffer is how many events may wait for Redis; beyond it events are
// dropped (live updates are best effort; they must never slow a grab).
const outBuffer = 1 << 14

// keyedEvent is an event waiting to be sent to its topic.
type keyedEvent struct {
	topic string
	event any
}

// New returns a publisher over rdb.
func New(rdb redis.UniversalClient) *Events {
	e := &Events{rdb: rdb, ch: channelsOf(rdb), pending: map[string]keyedEvent{}, versions: map[string]int64{}, timers: map[string]*time.Timer{}, window: CoalesceWindow,
		out: make(chan keyedEvent, outBuffer)}
	e.publisher = lifecycle.New("live events", e.publishLoop)
	return e
}

// Publisher is the loop that sends the events to Redis: Main starts it (a
// publisher nobody started starts at its first event) and Close stops it.
func (e *Events) Publisher() *lifecycle.Loop { return e.publisher }

// Close stops the publisher after sending what is queued; later events are dropped.
func (e *Events) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	e.mu.Unlock()
	e.publisher.Stop() // after what is queued is sent
}

// Publish sends event to the topic's subscribers now.
func (e *Events) Publish(ctx context.Context, topic string, event any) error {
	body, err := encodeEvent(event)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	return e.ch.publish(ctx, e.rdb, topic, Message{Topic: topic, Event: body}.Encode()).Err()
}

// PublishCoalesced sends at most one event per topic per window: the first at
// once, later ones at the end of the window with the last value winning, so a
// burst of grabs becomes a few broadcasts that still end on the final value.
func (e *Events) PublishCoalesced(topic string, event any) {
	e.PublishCoalescedKey(topic, topic, event)
}

// PublishCoalescedKey is PublishCoalesced with its own coalescing key, for a
// topic that carries several counters (a slot's goods): events with the same
// key coalesce, events with different keys do not replace each other.
func (e *Events) PublishCoalescedKey(topic, key string, event any) {
	e.PublishCoalescedVersion(topic, key, 0, event)
}

// PublishCoalescedVersion is PublishCoalescedKey for events that carry a
// version (a counter's state in Redis): an event older than one this key has
// sent or holds is dropped, so answers that reach the caller out of order
// still end the burst on the newest state. Version 0 means unversioned: the
// last event wins.
func (e *Events) PublishCoalescedVersion(topic, key string, version int64, event any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if version != 0 {
		if version < e.versions[key] {
			return
		}
		e.versions[key] = version
	}
	if _, busy := e.timers[key]; busy {
		e.pending[key] = keyedEvent{topic, event}
		return
	}
	e.send(topic, event)
	e.timers[key] = time.AfterFunc(e.window, func() { e.flush(key) })
}

// SendAll hands events to the publisher at once, in order and without
// coalescing: for events whose key sends nothing else within a window (a
// new order's first event), where a coalescing window would only cost a
// timer and two map entries each. A later event of the same key, sent
// coalesced, still leaves after these.
func (e *Events) SendAll(msgs []Message) {
	if len(msgs) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range msgs {
		e.send(m.Topic, m.Event)
	}
}

// SetWindow changes the shortest gap between two coalesced events on one
// topic (the stock push interval, a steering switch); d <= 0 is CoalesceWindow.
// Events waiting now leave at the end of their window as it was.
func (e *Events) SetWindow(d time.Duration) {
	if d <= 0 {
		d = CoalesceWindow
	}
	e.mu.Lock()
	e.window = d
	e.mu.Unlock()
}

// Window is the coalescing window in force.
func (e *Events) Window() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.window
}

func (e *Events) flush(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev, ok := e.pending[key]
	if !ok {
		delete(e.timers, key)
		delete(e.versions, key) // the burst is over; a new one starts from any version
		return
	}
	delete(e.pending, key)
	e.send(ev.topic, ev.event)
	e.timers[key] = time.AfterFunc(e.window, func() { e.flush(key) })
}

// send hands the event to the publisher goroutine, which sends whatever has
// gathered in one pipeline: a slow Redis never holds the lock or the caller.
// The caller holds e.mu.
func (e *Events) send(topic string, event any) {
	if e.closed {
		return
	}
	e.publisher.Start() // started already, unless the events are used without Main
	select {
	case e.out <- keyedEvent{topic, event}:
	default:
		slog.Warn("live event dropped: publisher is behind", "topic", topic)
	}
}

// publishLoop sends the events as they come, until ctx ends; then what is
// queued, and returns.
func (e *Events) publishLoop(ctx context.Context) {
	for {
		var first keyedEvent
		select {
		case first = <-e.out:
		case <-ctx.Done():
			select {
			case first = <-e.out:
			default:
				return
			}
		}
		pipe := e.rdb.Pipeline()
		add := func(ev keyedEvent) {
			body, err := encodeEvent(ev.event)
			if err != nil {
				slog.Error("encode live event", "topic", ev.topic, "err", err)
				return
			}
			e.ch.publish(context.Background(), pipe, ev.topic, Message{Topic: ev.topic, Event: body}.Encode())
		}
		add(first)
	drain:
		for n := 1; n < 512; n++ {
			select {
			case ev := <-e.out:
				add(ev)
			default:
				break drain
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.ErrClosed) {
			slog.Warn("publish live events", "err", err)
		}
		cancel()
	}
}

// encodeEvent is the event's JSON. An event that is a json.RawMessage is
// sent as it is, not checked and compacted again: a hot path (each winning
// grab's order event) encodes its events itself, and must make them valid,
// compact JSON.
func encodeEvent(event any) ([]byte, error) {
	if raw, ok := event.(json.RawMessage); ok {
		return raw, nil
	}
	return json.Marshal(event)
}

// PublishAll sends already encoded events in one pipeline (on a cluster, one
// per shard, each in the order given).
func (e *Events) PublishAll(ctx context.Context, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	pipe := e.rdb.Pipeline()
	for _, m := range msgs {
		e.ch.publish(ctx, pipe, m.Topic, m.Encode())
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Subscribe follows one topic's channel through r (a test's or a tool's
// view of what web processes receive) and returns once Redis has confirmed:
// a user's topic on their bucket's channel (sharded on a cluster), any other
// on the broadcast channel. Messages of other topics on the same channel
// arrive too; Decode tells them apart.
func Subscribe(ctx context.Context, r redis.UniversalClient, topic string) (*redis.PubSub, error) {
	ch, user := ChannelOf(r), false
	if id, ok := strings.CutPrefix(topic, "user:"); ok {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			ch, user = UserChannel(r, UserBucket(n)), true
		}
	}
	var ps *redis.PubSub
	if user && Sharded(r) {
		ps = r.SSubscribe(ctx, ch)
	} else {
		ps = r.Subscribe(ctx, ch)
	}
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, err
	}
	return ps, nil
}
