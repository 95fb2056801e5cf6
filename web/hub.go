package web

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gorilla/websocket"
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
// Sockets speak WebSocket through gorilla/websocket. An idle client costs no
// goroutine and no write buffer, only a small read buffer: sockets wait in
// one epoll set and are read by a small pool when data arrives, and writes are done by a pool of writers
// from each client's bounded queue. Each event is framed once for all of its
// subscribers (a websocket.PreparedMessage).
type Hub struct {
	// SendBuffer is how many messages may wait for one client; a client that
	// falls further behind is dropped so it never holds up the others.
	SendBuffer   int
	PingInterval time.Duration
	WriteTimeout time.Duration
	// ReadWindow is how long a message, once started, may take to arrive whole.
	ReadWindow time.Duration
	// MaxAnonPerIP caps the anonymous sockets of one client address (0: no cap).
	MaxAnonPerIP int

	rdb      redis.UniversalClient
	tokens   *account.Tokens
	log      *slog.Logger
	metrics  *metrics
	upgrader websocket.Upgrader
	ping     *websocket.PreparedMessage // the keepalive, framed once
	bye      *websocket.PreparedMessage // the Close of a socket whose session ended
	poll     poller
	ready    chan *wsClient // clients with messages to write
	reads    chan *wsClient // clients with data to read

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

func newHub(rdb redis.UniversalClient, tokens *account.Tokens, log *slog.Logger, m *metrics) *Hub {
	return &Hub{
		SendBuffer: 64, PingInterval: 30 * time.Second, WriteTimeout: 10 * time.Second, ReadWindow: readWindow,
		rdb: rdb, tokens: tokens, log: log, metrics: m,
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
		done: make(chan struct{}), stop: make(chan struct{}),
	}
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
		h.log.Info("dropping slow websocket client", "user", c.userID)
		h.metrics.dropped.Inc()
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

// readable is called by the poller when a client's socket has data or hung up.
func (h *Hub) readable(c *wsClient) {
	select {
	case h.reads <- c:
	default:
		go h.readReady(c)
	}
}

func (h *Hub) readWorker() {
	defer h.workers.Done()
	for {
		select {
		case <-h.stop:
			return
		case c := <-h.reads:
			h.readReady(c)
		}
	}
}

type clientOp struct {
	Op    string `json:"op"`
	Topic string `json:"topic"`
}

// readReady reads and handles what the poller saw arrive, then asks the poller
// for the next.
func (h *Hub) readReady(c *wsClient) {
	if !h.readOne(c, time.Now().Add(h.ReadWindow)) {
		return
	}
	if c.br.Buffered() > 0 {
		// The next message came with this one, so the socket will not signal
		// it: queue the client again, behind the others.
		h.readable(c)
		return
	}
	if err := h.poll.rearm(c); err != nil {
		h.remove(c)
	}
}

// yieldRead is what a control frame's handler panics with to end a read at
// the frame's end when nothing more has arrived: gorilla's NextReader goes on
// to wait for a data message, which on a socket that only answered a ping
// would hold a reader for the whole read window and then fail the socket.
// The frame has been consumed by then, so the connection's state is whole.
type yieldRead struct{}

// controlRead is called by each control frame's handler once the frame is read.
func (c *wsClient) controlRead() {
	c.lastSeen.Store(time.Now().UnixNano())
	if !c.inMessage && c.br.Buffered() == 0 {
		panic(yieldRead{})
	}
}

// readOne reads and handles the next message, waiting until deadline (zero:
// for ever); false when the client is gone or going.
func (h *Hub) readOne(c *wsClient, deadline time.Time) (alive bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(yieldRead); !ok {
				panic(r)
			}
			alive = true
		}
	}()
	c.ws.SetReadDeadline(deadline)
	_, r, err := c.ws.NextReader()
	if err == nil {
		// The read limit stops a message over maxMessage, whole or in
		// fragments, as its frame header arrives: gorilla closes with 1009.
		var payload []byte
		c.inMessage = true
		payload, err = io.ReadAll(r)
		c.inMessage = false
		if err == nil {
			c.lastSeen.Store(time.Now().UnixNano())
			h.handleOp(c, payload)
			return true
		}
	}
	// A Close's echo is queued by its handler; the writer closes the socket after it.
	if !errors.As(err, new(*websocket.CloseError)) {
		h.remove(c)
	}
	return false
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
		own := len(ownTopics(c.claims)) // the topics the hub gave the socket do not count
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

func (h *Hub) reply(c *wsClient, v any) {
	b, _ := json.Marshal(v)
	h.enqueue(c, outMsg{typ: websocket.TextMessage, data: b})
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
	for {
		select {
		case <-h.stop:
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
// is in memory, like every token check.
func (h *Hub) endSessions() {
	defer h.workers.Done()
	t := time.NewTicker(sessionCheck)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			for _, c := range h.snapshot() {
				if c.claims.UserID > 0 && !h.tokens.Live(c.claims) && !h.enqueueLast(c, outMsg{pm: h.bye}, true) {
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
// the session cookie or a bearer token; anonymous clients may watch public
// topics. Every refusal is answered here, with the contract's error, before
// the connection is handed to gorilla's Upgrader.
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
		// The slot is taken now, before the 101, so a client that dials again
		// the moment its last socket opened finds it counted.
		h.mu.Lock()
		full := h.anon[anonIP] >= h.MaxAnonPerIP
		if !full {
			h.anon[anonIP]++
		}
		h.mu.Unlock()
		if full {
			c.Set(fiber.HeaderRetryAfter, "10")
			return db.Errorf(db.ERATELIMITED, "too many anonymous live connections from your address; log in or close some")
		}
	}
	refuse := func(err error) error {
		h.releaseAnon(anonIP)
		return err
	}
	r := &http.Request{Method: c.Method(), Host: string(c.Request().Host()), Header: http.Header{}}
	for k, v := range c.Request().Header.All() {
		r.Header.Add(string(k), string(v))
	}
	if !websocket.IsWebSocketUpgrade(r) {
		return refuse(db.Errorf(db.EINVALID, "this endpoint speaks WebSocket only"))
	}
	if key, err := base64.StdEncoding.DecodeString(r.Header.Get("Sec-WebSocket-Key")); err != nil || len(key) != 16 || r.Header.Get("Sec-WebSocket-Version") != "13" {
		return refuse(db.Errorf(db.EINVALID, "unsupported WebSocket handshake"))
	}
	if !sameOrigin(r.Header.Get(fiber.HeaderOrigin), r.Host) {
		return refuse(db.Errorf(db.EFORBIDDEN, "cross-origin WebSocket refused"))
	}
	c.Status(fiber.StatusSwitchingProtocols)
	c.Context().HijackSetNoResponse(true) // the Upgrader writes the 101
	c.Context().Hijack(func(conn net.Conn) {
		// The server keeps hijacked connections open; use the bare socket so
		// fasthttp's buffers go back to it (clients send nothing before the 101).
		if u, ok := conn.(interface{ UnsafeConn() net.Conn }); ok {
			conn = u.UnsafeConn()
		}
		br := bufio.NewReaderSize(conn, readBuffer)
		ws, err := h.upgrader.Upgrade(&hijacked{conn, bufio.NewReadWriter(br, bufio.NewWriterSize(conn, 256))}, r, nil)
		if err != nil {
			h.releaseAnon(anonIP)
			conn.Close()
			return
		}
		h.attach(ws, br, claims, anonIP)
	})
	return nil
}

// hijacked is the http.ResponseWriter the Upgrader asks for, over a
// connection fasthttp has already handed over. Its reader becomes the
// socket's read buffer.
type hijacked struct {
	conn net.Conn
	rw   *bufio.ReadWriter
}

func (w *hijacked) Hijack() (net.Conn, *bufio.ReadWriter, error) { return w.conn, w.rw, nil }
func (w *hijacked) Header() http.Header                          { return http.Header{} }

// Write and WriteHeader carry only the Upgrader's own refusals, which Handle's
// checks leave nothing to trigger; the connection is closed after one.
func (w *hijacked) Write(p []byte) (int, error) { return len(p), nil }
func (w *hijacked) WriteHeader(int)             {}

// attach adopts an upgraded connection; an anonymous one's slot under its
// address's cap was taken by Handle.
func (h *Hub) attach(ws *websocket.Conn, br *bufio.Reader, claims model.Claims, anonIP netip.Addr) {
	userID := claims.UserID
	c := &wsClient{ws: ws, br: br, userID: userID, claims: claims, topics: map[string]struct{}{}, anonIP: anonIP}
	c.lastSeen.Store(time.Now().UnixNano())
	ws.SetReadLimit(maxMessage)
	// Prepared messages are framed for compression level 0 when made;
	// asking for the same level (compression is off) lets every socket
	// write that framing instead of a second one.
	ws.SetCompressionLevel(0)
	// Control frames are answered through the client's queue, by its
	// writer, so a reader never waits on a socket's writes.
	ws.SetPingHandler(func(data string) error {
		h.enqueue(c, outMsg{typ: websocket.PongMessage, data: []byte(data)})
		c.controlRead()
		return nil
	})
	ws.SetPongHandler(func(string) error {
		c.controlRead()
		return nil
	})
	ws.SetCloseHandler(func(code int, _ string) error {
		// Echo the code; the socket is closed once the echo is written.
		if !h.enqueueLast(c, outMsg{typ: websocket.CloseMessage, data: websocket.FormatCloseMessage(code, "")}, true) {
			h.remove(c)
		}
		return nil
	})
	h.mu.Lock()
	h.clients[c] = struct{}{}
	for _, t := range ownTopics(claims) {
		h.subscribeLocked(c, t)
	}
	h.mu.Unlock()
	h.metrics.sockets.Inc()
	if err := h.poll.add(c); err != nil {
		h.log.Warn("watch websocket", "err", err)
		h.remove(c)
	}
}

// remove forgets the client and closes its socket; safe to call more than once.
// releaseAnon frees an anonymous slot of ip (no-op for an invalid ip).
func (h *Hub) releaseAnon(ip netip.Addr) {
	h.mu.Lock()
	h.releaseAnonLocked(ip)
	h.mu.Unlock()
}

func (h *Hub) releaseAnonLocked(ip netip.Addr) {
	if !ip.IsValid() {
		return
	}
	if h.anon[ip]--; h.anon[ip] <= 0 {
		delete(h.anon, ip)
	}
}

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
	h.releaseAnonLocked(c.anonIP)
	for t := range c.topics {
		h.unsubscribeLocked(c, t)
	}
	h.mu.Unlock()
	h.metrics.sockets.Dec()
	h.poll.remove(c)
	c.ws.Close() // also frees a writer stuck on this client
}

// sameOrigin lets browsers connect only from this site; clients without an Origin header are not browsers.
func sameOrigin(origin, host string) bool {
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, host)
}

// ownTopics are the topics a socket follows from the start, by who it is:
// the user's own events and, for staff, their figures (a merchant's own,
// every merchant's for an admin). Clients cannot subscribe to these.
func ownTopics(cl model.Claims) []string {
	if cl.UserID <= 0 {
		return nil
	}
	switch cl.Role {
	case model.RoleMerchant:
		return []string{live.TopicUser(cl.UserID), live.TopicMerchant(cl.UserID)}
	case model.RoleAdmin:
		return []string{live.TopicUser(cl.UserID), live.TopicAdmins}
	}
	return []string{live.TopicUser(cl.UserID)}
}
