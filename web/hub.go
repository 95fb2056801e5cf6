package web

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/handlers"
)

// publicTopic matches the topics anyone may subscribe to.
var publicTopic = regexp.MustCompile(`^(goods|slot|redpacket|coupon):[1-9][0-9]{0,18}$`)

// Hub delivers live events to WebSocket clients. Events arrive through Redis
// pub/sub, so a publish in any process reaches the clients of every process.
//
// An idle client costs no goroutine: sockets wait in one epoll set and are
// read by a small pool when a frame arrives, and writes are done by a pool of
// writers from each client's bounded queue. Each event is framed once for all
// of its subscribers.
type Hub struct {
	// SendBuffer is how many events may wait for one client; a client that
	// falls further behind is dropped so it never holds up the others.
	SendBuffer   int
	PingInterval time.Duration
	WriteTimeout time.Duration
	// MaxAnonPerIP caps the anonymous sockets of one client address (0: no cap).
	MaxAnonPerIP int

	rdb     redis.UniversalClient
	tokens  *account.Tokens
	log     *slog.Logger
	metrics *metrics
	poll    poller
	ready   chan *wsClient // clients with frames to write
	reads   chan *wsClient // clients with a frame to read

	mu      sync.RWMutex
	topics  map[string]map[*wsClient]struct{}
	clients map[*wsClient]struct{}
	anon    map[netip.Addr]int // anonymous sockets by client address
	pubsub  *redis.PubSub
	done    chan struct{}
	stop    chan struct{}
	workers sync.WaitGroup
}

// wsClient is one WebSocket connection.
type wsClient struct {
	conn     net.Conn
	userID   int64
	claims   model.Claims        // the token the socket was opened with (zero: anonymous)
	anonIP   netip.Addr          // set when the socket counts against its address's anonymous cap
	topics   map[string]struct{} // guarded by Hub.mu
	lastSeen atomic.Int64        // unix nanoseconds of the last frame read

	mu        sync.Mutex
	queue     [][]byte // framed messages waiting to be written
	scheduled bool     // queued on Hub.ready or being written
	ending    bool     // a Close frame is queued: nothing more is, and the socket goes once it is written
	closed    bool
}

const (
	writers    = 32
	readers    = 8
	maxFrame   = 4096            // a larger frame closes the socket with 1009
	maxTopics  = 64              // public topics one socket may follow; beyond, subscribe answers limit_reached
	readWindow = 5 * time.Second // a started frame must arrive whole within this
)

func newHub(rdb redis.UniversalClient, tokens *account.Tokens, log *slog.Logger, m *metrics) *Hub {
	return &Hub{
		SendBuffer: 64, PingInterval: 30 * time.Second, WriteTimeout: 10 * time.Second,
		rdb: rdb, tokens: tokens, log: log, metrics: m,
		ready: make(chan *wsClient, 1<<14), reads: make(chan *wsClient, 1<<12),
		topics: map[string]map[*wsClient]struct{}{}, clients: map[*wsClient]struct{}{}, anon: map[netip.Addr]int{},
		done: make(chan struct{}), stop: make(chan struct{}),
	}
}

// Start subscribes to the live channel and returns once Redis has confirmed,
// so no event published afterwards is missed.
func (h *Hub) Start(ctx context.Context) error {
	h.pubsub = h.rdb.Subscribe(ctx, live.ChannelOf(h.rdb))
	if _, err := h.pubsub.Receive(ctx); err != nil {
		h.pubsub.Close()
		return err
	}
	var err error
	if h.poll, err = newPoller(h.readable, func(c *wsClient) {
		for h.readOne(c, time.Time{}) {
		}
	}); err != nil {
		h.pubsub.Close()
		return err
	}
	for i := 0; i < writers; i++ {
		h.workers.Add(1)
		go h.writeWorker()
	}
	for i := 0; i < readers; i++ {
		h.workers.Add(1)
		go h.readWorker()
	}
	h.workers.Add(2)
	go h.keepalive()
	go h.endSessions()
	go h.run()
	return nil
}

func (h *Hub) run() {
	defer close(h.done)
	for msg := range h.pubsub.Channel(redis.WithChannelSize(4096)) {
		m, err := live.Decode(msg.Payload)
		if err != nil {
			h.log.Warn("bad live message", "err", err)
			continue
		}
		h.dispatch(m.Topic, m.Event)
	}
}

// dispatch frames the event once and queues it for every subscriber of the
// topic without ever waiting on one; a topic nobody here follows costs nothing.
func (h *Hub) dispatch(topic string, event []byte) {
	var slow []*wsClient
	h.mu.RLock()
	subs := h.topics[topic]
	var frame []byte
	if len(subs) > 0 {
		frame = ws.MustCompileFrame(ws.NewTextFrame(event))
	}
	for c := range subs {
		if !h.enqueue(c, frame) {
			slow = append(slow, c)
		}
	}
	h.mu.RUnlock()
	for _, c := range slow {
		h.log.Info("dropping slow websocket client", "user", c.userID)
		h.metrics.dropped.Inc()
		h.remove(c)
	}
}

// enqueue adds a frame to the client's queue; false when the queue is full.
func (h *Hub) enqueue(c *wsClient, frame []byte) bool {
	return h.enqueueFrame(c, frame, false)
}

// enqueueFrame queues frame; last marks it the socket's final frame (a Close).
func (h *Hub) enqueueFrame(c *wsClient, frame []byte, last bool) bool {
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
	c.queue = append(c.queue, frame)
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

func (h *Hub) writeWorker() {
	defer h.workers.Done()
	for {
		select {
		case <-h.stop:
			return
		case c := <-h.ready:
			h.flush(c)
		}
	}
}

// flush writes the client's queue until it is empty, in one system call per batch.
func (h *Hub) flush(c *wsClient) {
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		if len(batch) == 0 || c.closed {
			done := c.ending && !c.closed
			c.scheduled = false
			c.mu.Unlock()
			if done { // the Close frame went out
				h.remove(c)
			}
			return
		}
		c.mu.Unlock()
		bufs := net.Buffers(batch)
		c.conn.SetWriteDeadline(time.Now().Add(h.WriteTimeout))
		if _, err := bufs.WriteTo(c.conn); err != nil {
			h.remove(c)
			c.mu.Lock()
			c.scheduled = false
			c.mu.Unlock()
			return
		}
	}
}

// readable is called by the poller when a client's socket has data or hung up.
func (h *Hub) readable(c *wsClient) {
	select {
	case h.reads <- c:
	default:
		go h.readFrame(c)
	}
}

func (h *Hub) readWorker() {
	defer h.workers.Done()
	for {
		select {
		case <-h.stop:
			return
		case c := <-h.reads:
			h.readFrame(c)
		}
	}
}

type clientOp struct {
	Op    string `json:"op"`
	Topic string `json:"topic"`
}

// readFrame reads and handles one frame the poller saw arrive, then asks the poller for the next.
func (h *Hub) readFrame(c *wsClient) {
	if !h.readOne(c, time.Now().Add(readWindow)) {
		return
	}
	if err := h.poll.rearm(c); err != nil {
		h.remove(c)
	}
}

// readOne reads and handles one frame, waiting until deadline (zero: for
// ever); false when the client is gone.
func (h *Hub) readOne(c *wsClient, deadline time.Time) bool {
	c.conn.SetReadDeadline(deadline)
	hdr, err := ws.ReadHeader(c.conn)
	// A client's ops are small: a message must come in one frame of at most
	// maxFrame bytes; a bigger or fragmented one closes the socket with 1009
	// before its payload is read.
	if err == nil && (hdr.Length > maxFrame || !hdr.Fin || hdr.OpCode == ws.OpContinuation) {
		h.closeWith(c, ws.StatusMessageTooBig, "a message must fit in one frame of 4 KiB")
		return false
	}
	if err != nil || !hdr.Masked {
		h.remove(c)
		return false
	}
	payload := make([]byte, hdr.Length)
	if _, err := io.ReadFull(c.conn, payload); err != nil {
		h.remove(c)
		return false
	}
	ws.Cipher(payload, hdr.Mask, 0)
	c.lastSeen.Store(time.Now().UnixNano())
	switch hdr.OpCode {
	case ws.OpClose:
		h.remove(c)
		return false
	case ws.OpPing:
		h.enqueue(c, ws.MustCompileFrame(ws.NewPongFrame(payload)))
	case ws.OpText, ws.OpBinary:
		h.handleOp(c, payload)
	}
	return true
}

func (h *Hub) handleOp(c *wsClient, payload []byte) {
	var op clientOp
	if json.Unmarshal(payload, &op) != nil || !publicTopic.MatchString(op.Topic) || (op.Op != "subscribe" && op.Op != "unsubscribe") {
		h.reply(c, map[string]any{"type": "error", "error": map[string]string{"code": db.EINVALID, "message": "unknown op or topic"}})
		return
	}
	full := false
	h.mu.Lock()
	if _, live := h.clients[c]; live {
		_, already := c.topics[op.Topic]
		own := 0
		if c.userID > 0 {
			own = 1 // the user's own topic does not count
		}
		switch {
		case op.Op == "unsubscribe":
			h.unsubscribeLocked(c, op.Topic)
		case already:
		case len(c.topics)-own >= maxTopics:
			full = true
		default:
			h.subscribeLocked(c, op.Topic)
		}
	}
	h.mu.Unlock()
	if full {
		h.reply(c, map[string]any{"type": "error", "topic": op.Topic, "error": map[string]string{
			"code": db.ELIMITREACHED, "message": fmt.Sprintf("a socket may follow at most %d topics", maxTopics)}})
		return
	}
	h.reply(c, map[string]any{"type": op.Op + "d", "topic": op.Topic})
}

// closeWith sends a close frame with the status and drops the client. The
// frame goes in one write, which never interleaves with a writer's.
func (h *Hub) closeWith(c *wsClient, status ws.StatusCode, reason string) {
	c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	c.conn.Write(ws.MustCompileFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(status, reason))))
	h.remove(c)
}

func (h *Hub) reply(c *wsClient, v any) {
	b, _ := json.Marshal(v)
	h.enqueue(c, ws.MustCompileFrame(ws.NewTextFrame(b)))
}

func (h *Hub) subscribeLocked(c *wsClient, topic string) {
	if h.topics[topic] == nil {
		h.topics[topic] = map[*wsClient]struct{}{}
	}
	h.topics[topic][c] = struct{}{}
	c.topics[topic] = struct{}{}
}

func (h *Hub) unsubscribeLocked(c *wsClient, topic string) {
	delete(c.topics, topic)
	delete(h.topics[topic], c)
	if len(h.topics[topic]) == 0 {
		delete(h.topics, topic)
	}
}

// keepalive pings every client each PingInterval and drops those silent for two.
func (h *Hub) keepalive() {
	defer h.workers.Done()
	t := time.NewTicker(h.PingInterval)
	defer t.Stop()
	ping := ws.MustCompileFrame(ws.NewPingFrame(nil))
	for {
		select {
		case <-h.stop:
			return
		case now := <-t.C:
			for _, c := range h.snapshot() {
				if now.UnixNano()-c.lastSeen.Load() > int64(2*h.PingInterval) || !h.enqueue(c, ping) {
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
// is in memory, like every token check.
func (h *Hub) endSessions() {
	defer h.workers.Done()
	t := time.NewTicker(sessionCheck)
	defer t.Stop()
	bye := ws.MustCompileFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusPolicyViolation, "session ended")))
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			for _, c := range h.snapshot() {
				if c.claims.UserID > 0 && !h.tokens.Live(c.claims) && !h.enqueueFrame(c, bye, true) {
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

// Close stops listening and disconnects every client.
func (h *Hub) Close() {
	if h.pubsub == nil {
		return
	}
	h.pubsub.Close()
	<-h.done
	for _, c := range h.snapshot() {
		h.remove(c)
	}
	close(h.stop)
	h.workers.Wait()
	h.poll.close()
}

// Handle upgrades GET /ws to a WebSocket. The caller is known from ?token=,
// the session cookie or a bearer token; anonymous clients may watch public topics.
func (h *Hub) Handle(c *fiber.Ctx) error {
	var claims model.Claims
	if token := c.Query("token"); token != "" {
		cl, err := h.tokens.Verify(token)
		if err != nil {
			return err
		}
		claims = cl
	} else if cl, ok := handlers.ClaimsOf(c); ok {
		claims = cl
	}
	userID := claims.UserID
	var anonIP netip.Addr
	if userID == 0 && h.MaxAnonPerIP > 0 {
		anonIP = handlers.ClientIP(c)
		h.mu.RLock()
		n := h.anon[anonIP]
		h.mu.RUnlock()
		if n >= h.MaxAnonPerIP {
			c.Set(fiber.HeaderRetryAfter, "10")
			return db.Errorf(db.ERATELIMITED, "too many anonymous live connections from your address; log in or close some")
		}
	}
	if !strings.EqualFold(c.Get(fiber.HeaderUpgrade), "websocket") || !strings.Contains(strings.ToLower(c.Get(fiber.HeaderConnection)), "upgrade") {
		return db.Errorf(db.EINVALID, "this endpoint speaks WebSocket only")
	}
	key := c.Get("Sec-WebSocket-Key")
	if key == "" || c.Get("Sec-WebSocket-Version") != "13" {
		return db.Errorf(db.EINVALID, "unsupported WebSocket handshake")
	}
	if !sameOrigin(c.Get(fiber.HeaderOrigin), string(c.Request().Host())) {
		return db.Errorf(db.EFORBIDDEN, "cross-origin WebSocket refused")
	}
	c.Status(fiber.StatusSwitchingProtocols)
	c.Set(fiber.HeaderUpgrade, "websocket")
	c.Set(fiber.HeaderConnection, "Upgrade")
	c.Set("Sec-WebSocket-Accept", acceptKey(key))
	c.Context().Hijack(func(conn net.Conn) {
		// The server keeps hijacked connections open; use the bare socket so
		// fasthttp's buffers go back to it (clients send nothing before the 101).
		if u, ok := conn.(interface{ UnsafeConn() net.Conn }); ok {
			conn = u.UnsafeConn()
		}
		h.attach(conn, claims, anonIP)
	})
	return nil
}

// attach adopts an upgraded connection. An anonymous one over its address's
// cap (upgrades racing past Handle's check) is closed at once.
func (h *Hub) attach(conn net.Conn, claims model.Claims, anonIP netip.Addr) {
	userID := claims.UserID
	c := &wsClient{conn: conn, userID: userID, claims: claims, topics: map[string]struct{}{}, anonIP: anonIP}
	c.lastSeen.Store(time.Now().UnixNano())
	h.mu.Lock()
	if anonIP.IsValid() {
		if h.anon[anonIP] >= h.MaxAnonPerIP {
			h.mu.Unlock()
			conn.Write(ws.MustCompileFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusPolicyViolation, "too many anonymous connections"))))
			conn.Close()
			return
		}
		h.anon[anonIP]++
	}
	h.clients[c] = struct{}{}
	if userID > 0 {
		h.subscribeLocked(c, live.TopicUser(userID))
	}
	h.mu.Unlock()
	h.metrics.sockets.Inc()
	if err := h.poll.add(c); err != nil {
		h.log.Warn("watch websocket", "err", err)
		h.remove(c)
	}
}

// remove forgets the client and closes its socket; safe to call more than once.
func (h *Hub) remove(c *wsClient) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.queue = nil
	c.mu.Unlock()
	h.mu.Lock()
	delete(h.clients, c)
	if c.anonIP.IsValid() {
		if h.anon[c.anonIP]--; h.anon[c.anonIP] <= 0 {
			delete(h.anon, c.anonIP)
		}
	}
	for t := range c.topics {
		h.unsubscribeLocked(c, t)
	}
	h.mu.Unlock()
	h.metrics.sockets.Dec()
	h.poll.remove(c)
	c.conn.Close() // also frees a writer stuck on this client
}

// sameOrigin lets browsers connect only from this site; clients without an Origin header are not browsers.
func sameOrigin(origin, host string) bool {
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, host)
}

func acceptKey(key string) string {
	h := sha1.New()
	h.Write([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}
