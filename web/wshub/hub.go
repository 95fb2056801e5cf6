// Package wshub is the live hub behind GET /ws: it upgrades requests to
// WebSockets, keeps each socket's topics, and delivers the live events that
// db/live publishes through Redis to the sockets that follow them. Its
// epoll poller and its connection handling stay inside; package web mounts
// Handle and starts and closes the hub.
//
// (db/live is the other half: the event bus services publish on. This
// package is named for what it serves, WebSocket clients, so the two are
// not mistaken for each other.)
package wshub

import (
	"bufio"
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
)

// publicTopic matches the topics anyone may subscribe to.
var publicTopic = regexp.MustCompile(`^(goods|slot|redpacket|coupon):[1-9][0-9]{0,18}$`)

// Tokens checks the token a socket is opened with and, while it stays
// open, whether its session is still live (account.Tokens does both).
type Tokens interface {
	Verify(token string) (model.Claims, error)
	Live(model.Claims) bool
}

// Config is what the hub needs from the wiring and how it behaves; a zero
// duration or size takes its default.
type Config struct {
	Redis  redis.UniversalClient // the live channel (db/live) events arrive on
	Tokens Tokens
	Log    *slog.Logger
	// Registry, when set, gets the hub's series (open sockets, slow clients dropped).
	Registry prometheus.Registerer
	// Identify tells who is asking from the request the web middleware has
	// already seen: the caller's claims (zero: anonymous) and client address.
	Identify func(c *fiber.Ctx) (claims model.Claims, ip netip.Addr)

	// SendBuffer is how many messages may wait for one client (default 64);
	// a client that falls further behind is dropped so it never holds up the others.
	SendBuffer int
	// PingInterval is how often sockets are pinged (default 30s); one silent for two is dropped.
	PingInterval time.Duration
	WriteTimeout time.Duration // default 10s
	// ReadWindow is how long a message, once started, may take to arrive whole (default 5s).
	ReadWindow time.Duration
	// Observe, when set, sees every event this process receives on the live
	// channel before it goes to sockets (db/goods' Catalog keeps the
	// shoppers' reads current with it), and an empty topic each time the
	// channel is subscribed again (events may have been missed); it must not block.
	Observe func(topic string, event []byte)
	// MaxAnonPerIP caps the anonymous sockets of one client address (0: no cap).
	MaxAnonPerIP int
	// Hello, when set, is the first message each socket gets (nil: none):
	// what holds for every page whenever it connects, such as whether the
	// sale is paused (Broadcast tells the sockets already open of a change).
	Hello func() []byte
}

// Hub delivers live events to WebSocket clients. Events arrive through Redis
// pub/sub, so a publish in any process reaches the clients of every process:
// public topics on the broadcast channel every hub follows, a user's own on
// their bucket's channel, which a hub follows only while it holds a socket
// of a user in the bucket (hub_buckets.go).
//
// Sockets speak WebSocket through gorilla/websocket. An idle client costs no
// goroutine and no write buffer, only a small read buffer: sockets wait in
// one epoll set and are read by a small pool when data arrives, and writes are done by a pool of writers
// from each client's bounded queue. Each event is framed once for all of its
// subscribers (a websocket.PreparedMessage).
type Hub struct {
	// Config may be changed until Start.
	Config

	sockets prometheus.Gauge
	dropped prometheus.Counter
	// userEvents counts the user-bucket messages received (UserEventsReceived).
	userEvents       atomic.Int64
	userEventsSeries prometheus.Counter
	upgrader         websocket.Upgrader
	ping             *websocket.PreparedMessage // the keepalive, framed once
	bye              *websocket.PreparedMessage // the Close of a socket whose session ended
	poll             poller
	ready            chan *wsClient // clients with messages to write
	reads            chan *wsClient // clients with data to read

	mu      sync.RWMutex
	topics  map[string]map[*wsClient]struct{}
	clients map[*wsClient]struct{}
	anon    map[netip.Addr]int // anonymous sockets by client address
	pubsub  *redis.PubSub      // the broadcast channel and, on one server, the user buckets
	buckets *buckets
	// broadcast is the channel of public events (live.ChannelOf).
	broadcast string
	receivers sync.WaitGroup // the goroutines reading the shards' connections (hub_buckets.go)
	// loops are the hub's background loops (Loops), ready once Start has
	// subscribed; receiver, the last of them, reads pubsub.
	loops    lifecycle.Loops
	receiver *lifecycle.Loop

	closeOnce sync.Once
}

// wsClient is one WebSocket connection.
type wsClient struct {
	ws       *websocket.Conn
	br       *bufio.Reader // ws's read buffer, to tell whether more has arrived than was read
	userID   int64
	claims   model.Claims        // the token the socket was opened with (zero: anonymous)
	anonIP   netip.Addr          // set when the socket counts against its address's anonymous cap
	topics   map[string]struct{} // guarded by Hub.mu
	lastSeen atomic.Int64        // unix nanoseconds of the last frame read

	inMessage bool // a data message is being read; touched only by the socket's one reader

	mu        sync.Mutex
	queue     []outMsg // messages waiting to be written
	scheduled bool     // queued on Hub.ready or being written
	ending    bool     // a Close is queued: nothing more is, and the socket goes once it is written
	closed    bool
}

// outMsg is one message waiting for a client's writer: a prepared message
// (framed once, shared by many sockets) or one of its own.
type outMsg struct {
	pm   *websocket.PreparedMessage
	typ  int // when pm is nil
	data []byte
}

func (m outMsg) write(ws *websocket.Conn, deadline time.Time) error {
	switch {
	case m.pm != nil:
		return ws.WritePreparedMessage(m.pm)
	case m.typ == websocket.CloseMessage || m.typ == websocket.PingMessage || m.typ == websocket.PongMessage:
		return ws.WriteControl(m.typ, m.data, deadline)
	default:
		return ws.WriteMessage(m.typ, m.data)
	}
}

const (
	writers    = 32
	readers    = 8
	maxMessage = 4096            // a larger message, whole or in fragments, closes the socket with 1009
	maxTopics  = 64              // public topics one socket may follow; beyond, subscribe answers limit_reached
	readWindow = 5 * time.Second // default ReadWindow
	// readBuffer is each socket's read buffer, which it keeps while idle. The
	// Upgrader adopts a hijacked reader only when it holds more than 256 bytes.
	readBuffer = 512
)

// New makes a hub; Start it and its Loops before mounting Handle.
func New(cfg Config) *Hub {
	if cfg.SendBuffer <= 0 {
		cfg.SendBuffer = 64
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 30 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.ReadWindow <= 0 {
		cfg.ReadWindow = readWindow
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	h := &Hub{
		Config: cfg,
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seckill_websocket_connections", Help: "Open WebSocket connections.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_websocket_dropped_total", Help: "WebSocket clients dropped for reading too slowly.",
		}),
		upgrader: websocket.Upgrader{
			HandshakeTimeout: 10 * time.Second,
			// Writers borrow a buffer only for a message of a socket's own
			// (events and control frames are written prepared), so an idle
			// socket holds none. ReadBufferSize stays 0: the Upgrader then keeps
			// the reader hijacked hands it, whose fill the hub can see.
			WriteBufferPool: &sync.Pool{},
			// Handle has checked the origin and answered a foreign one with the contract's error.
			CheckOrigin: func(*http.Request) bool { return true },
		},
		ping:  mustPrepare(websocket.PingMessage, nil),
		bye:   mustPrepare(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "session ended")),
		ready: make(chan *wsClient, 1<<14), reads: make(chan *wsClient, 1<<12),
		topics: map[string]map[*wsClient]struct{}{}, clients: map[*wsClient]struct{}{}, anon: map[netip.Addr]int{},
		userEventsSeries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_live_user_events_received_total",
			Help: "Users' own live events this process received from Redis (only those of users whose sockets it holds).",
		}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(h.sockets, h.dropped, h.userEventsSeries)
	}
	return h
}

// mustPrepare frames a message once; it fails only for a message type that does not exist.
func mustPrepare(typ int, data []byte) *websocket.PreparedMessage {
	pm, err := websocket.NewPreparedMessage(typ, data)
	if err != nil {
		panic(err)
	}
	return pm
}

// Start subscribes to the live channel and returns once Redis has confirmed,
// so no event published afterwards is missed; the hub's Loops, ready then,
// deliver the events and serve the sockets.
func (h *Hub) Start(ctx context.Context) error {
	h.broadcast = live.ChannelOf(h.Redis)
	h.buckets = newBuckets(h)
	// h.pubsub is set only once the rest has started, so a Close after a
	// failed Start (a process whose opening timed out) finds nothing to stop.
	pubsub := h.Redis.Subscribe(ctx, h.broadcast)
	if _, err := pubsub.Receive(ctx); err != nil {
		pubsub.Close()
		return err
	}
	var err error
	if h.poll, err = newPoller(h.readable, func(c *wsClient) {
		for h.readOne(c, time.Time{}) {
		}
	}); err != nil {
		pubsub.Close()
		return err
	}
	h.pubsub = pubsub
	h.loops = lifecycle.Loops{lifecycle.New("live hub poller", h.poll.wait)}
	for range writers {
		h.loops = append(h.loops, lifecycle.New("live hub writer", h.writeWorker))
	}
	for range readers {
		h.loops = append(h.loops, lifecycle.New("live hub reader", h.readWorker))
	}
	h.receiver = lifecycle.New("live hub receiver", func(ctx context.Context) {
		defer context.AfterFunc(ctx, func() { pubsub.Close() })() // ends the read under way
		h.receive(ctx, pubsub)
	})
	h.loops = append(h.loops, lifecycle.New("live hub keepalive", h.keepalive),
		lifecycle.New("live hub sessions", h.endSessions), h.receiver)
	return nil
}

// Loops are the hub's background loops, ready once Start has returned (none
// before, or after a Start that failed): the poller, the writers and the
// readers of the sockets, the keepalive, the check of ended sessions, and
// the receiver of the live channel. The web server's Start readies them and
// its Shutdown stops them (Close); Main starts them.
func (h *Hub) Loops() lifecycle.Loops { return h.loops }

// dispatch frames the event once and queues it for every subscriber of the
// topic without ever waiting on one; a topic nobody here follows costs nothing.
func (h *Hub) dispatch(topic string, event []byte) {
	if h.Observe != nil {
		h.Observe(topic, event)
	}
	var slow []*wsClient
	h.mu.RLock()
	subs := h.topics[topic]
	var msg outMsg
	if len(subs) > 0 {
		msg.pm = mustPrepare(websocket.TextMessage, event)
	}
	for c := range subs {
		if !h.enqueue(c, msg) {
			slow = append(slow, c)
		}
	}
	h.mu.RUnlock()
	for _, c := range slow {
		h.Log.Info("dropping slow websocket client", "user", c.userID)
		h.dropped.Inc()
		h.remove(c)
	}
}

// Broadcast sends event to every socket of this process, whatever it
// follows: a change each process learns on its own (the steering switches
// it reloads), so it goes through no channel.
func (h *Hub) Broadcast(event []byte) {
	msg := outMsg{pm: mustPrepare(websocket.TextMessage, event)}
	var slow []*wsClient
	for _, c := range h.snapshot() {
		if !h.enqueue(c, msg) {
			slow = append(slow, c)
		}
	}
	for _, c := range slow {
		h.Log.Info("dropping slow websocket client", "user", c.userID)
		h.dropped.Inc()
		h.remove(c)
	}
}

// enqueue adds a message to the client's queue; false when the queue is full.
func (h *Hub) enqueue(c *wsClient, m outMsg) bool {
	return h.enqueueLast(c, m, false)
}

// enqueueLast queues m; last marks it the socket's final message (a Close).
func (h *Hub) enqueueLast(c *wsClient, m outMsg, last bool) bool {
	c.mu.Lock()
	if c.closed || c.ending {
		c.mu.Unlock()
		return true
	}
	if len(c.queue) >= h.SendBuffer {
		c.mu.Unlock()
		return false
	}
	c.ending = last
	c.queue = append(c.queue, m)
	schedule := !c.scheduled
	c.scheduled = true
	c.mu.Unlock()
	if schedule {
		select {
		case h.ready <- c:
		default:
			go h.flush(c) // the pool is swamped; never block the dispatcher
		}
	}
	return true
}

// writeWorker writes the queues of the clients scheduled on ready until ctx ends.
func (h *Hub) writeWorker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-h.ready:
			h.flush(c)
		}
	}
}

// flush writes the client's queue until it is empty. It is the socket's only
// writer (gorilla allows one at a time): a client is scheduled once until its
// queue is drained.
func (h *Hub) flush(c *wsClient) {
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		if len(batch) == 0 || c.closed {
			done := c.ending && !c.closed
			c.scheduled = false
			c.mu.Unlock()
			if done { // the Close went out
				h.remove(c)
			}
			return
		}
		c.mu.Unlock()
		deadline := time.Now().Add(h.WriteTimeout)
		c.ws.SetWriteDeadline(deadline)
		for _, m := range batch {
			if err := m.write(c.ws, deadline); err != nil {
				h.remove(c)
				c.mu.Lock()
				c.scheduled = false
				c.mu.Unlock()
				return
			}
		}
	}
}

// keepalive pings every client each PingInterval and drops those silent
// for two, until ctx ends.
func (h *Hub) keepalive(ctx context.Context) {
	t := time.NewTicker(h.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, c := range h.snapshot() {
				if now.UnixNano()-c.lastSeen.Load() > int64(2*h.PingInterval) || !h.enqueue(c, outMsg{pm: h.ping}) {
					h.remove(c)
				}
			}
		}
	}
}

// sessionCheck is how often sockets are checked against ended sessions.
const sessionCheck = time.Second

// endSessions closes, within sessionCheck, the sockets whose session ended
// (logout, password change) or whose token expired: a socket outlives the
// request that opened it, so it is held to the same revocations. The check
// is in memory, like every token check. It checks until ctx ends.
func (h *Hub) endSessions(ctx context.Context) {
	t := time.NewTicker(sessionCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, c := range h.snapshot() {
				if c.claims.UserID > 0 && !h.Tokens.Live(c.claims) && !h.enqueueLast(c, outMsg{pm: h.bye}, true) {
					h.remove(c)
				}
			}
		}
	}
}

// snapshot lists the connected clients, to act on each without holding the lock.
func (h *Hub) snapshot() []*wsClient {
	h.mu.RLock()
	defer h.mu.RUnlock()
	all := make([]*wsClient, 0, len(h.clients))
	for c := range h.clients {
		all = append(all, c)
	}
	return all
}

// Clients returns how many clients are connected to this process.
func (h *Hub) Clients() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.clients)
}

// Close stops listening, disconnects every client and stops the Loops;
// later calls do nothing.
func (h *Hub) Close() {
	h.closeOnce.Do(h.close)
}

// close stops receiving events first, then disconnects the clients (which
// frees a writer stuck on one), then stops the other loops, the poller last.
func (h *Hub) close() {
	if h.pubsub == nil {
		return
	}
	h.receiver.Stop()
	h.pubsub.Close() // when the receiver never started
	h.buckets.close()
	h.receivers.Wait()
	for _, c := range h.snapshot() {
		h.remove(c)
	}
	h.loops.Stop()
	h.poll.close()
}
