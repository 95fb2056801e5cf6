package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/handlers"
)

// publicTopic matches the topics anyone may subscribe to.
var publicTopic = regexp.MustCompile(`^(goods|slot|redpacket|coupon):[1-9][0-9]{0,18}$`)

// Hub delivers live events to WebSocket clients. Events arrive through Redis
// pub/sub, so a publish in any process reaches the clients of every process.
type Hub struct {
	// SendBuffer is how many events may wait for one client; a client that
	// falls further behind is dropped so it never holds up the others.
	SendBuffer   int
	PingInterval time.Duration
	WriteTimeout time.Duration

	rdb      redis.UniversalClient
	tokens   *db.Tokens
	log      *slog.Logger
	metrics  *metrics
	upgrader websocket.Upgrader

	mu      sync.RWMutex
	topics  map[string]map[*wsClient]struct{}
	clients map[*wsClient]struct{}
	pubsub  *redis.PubSub
	done    chan struct{}
}

type wsClient struct {
	conn   *websocket.Conn
	send   chan []byte
	userID int64
	topics map[string]struct{} // guarded by Hub.mu
	once   sync.Once
}

func newHub(rdb redis.UniversalClient, tokens *db.Tokens, log *slog.Logger, m *metrics) *Hub {
	h := &Hub{
		SendBuffer: 256, PingInterval: 30 * time.Second, WriteTimeout: 10 * time.Second,
		rdb: rdb, tokens: tokens, log: log, metrics: m,
		topics: map[string]map[*wsClient]struct{}{}, clients: map[*wsClient]struct{}{},
		done: make(chan struct{}),
	}
	h.upgrader = websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024, CheckOrigin: sameOrigin}
	return h
}

// sameOrigin lets browsers connect only from this site; clients without an Origin header are not browsers.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// Start subscribes to the live channel and returns once Redis has confirmed,
// so no event published afterwards is missed.
func (h *Hub) Start(ctx context.Context) error {
	h.pubsub = h.rdb.Subscribe(ctx, db.LiveChannelOf(h.rdb))
	if _, err := h.pubsub.Receive(ctx); err != nil {
		h.pubsub.Close()
		return err
	}
	go h.run()
	return nil
}

func (h *Hub) run() {
	defer close(h.done)
	for msg := range h.pubsub.Channel(redis.WithChannelSize(4096)) {
		var m db.LiveMessage
		if err := json.Unmarshal([]byte(msg.Payload), &m); err != nil {
			h.log.Warn("bad live message", "err", err)
			continue
		}
		h.dispatch(m.Topic, m.Event)
	}
}

// dispatch hands the event to every subscriber without ever waiting on one.
func (h *Hub) dispatch(topic string, event []byte) {
	var slow []*wsClient
	h.mu.RLock()
	for c := range h.topics[topic] {
		select {
		case c.send <- event:
		default:
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

// Clients returns how many clients are connected to this process.
func (h *Hub) Clients() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.clients)
}

// Close stops listening and disconnects every client.
func (h *Hub) Close() {
	if h.pubsub != nil {
		h.pubsub.Close()
		<-h.done
	}
	h.mu.RLock()
	all := make([]*wsClient, 0, len(h.clients))
	for c := range h.clients {
		all = append(all, c)
	}
	h.mu.RUnlock()
	for _, c := range all {
		h.remove(c)
	}
}

// ServeHTTP upgrades the request to a WebSocket. The caller is known from the
// session cookie or ?token=; anonymous clients may watch public topics.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var userID int64
	token := r.URL.Query().Get("token")
	if token == "" {
		if ck, err := r.Cookie(handlers.SessionCookie); err == nil {
			token = ck.Value
		}
	}
	if token != "" {
		cl, err := h.tokens.Verify(token)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"unauthorized","message":"invalid token"}}`))
			return
		}
		userID = cl.UserID
	}
	conn, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered already
	}
	c := &wsClient{conn: conn, send: make(chan []byte, h.SendBuffer), userID: userID, topics: map[string]struct{}{}}
	h.mu.Lock()
	h.clients[c] = struct{}{}
	if userID > 0 {
		h.subscribeLocked(c, db.TopicUser(userID))
	}
	h.mu.Unlock()
	h.metrics.sockets.Inc()
	go h.writeLoop(c)
	h.readLoop(c)
}

type clientOp struct {
	Op    string `json:"op"`
	Topic string `json:"topic"`
}

func (h *Hub) readLoop(c *wsClient) {
	defer h.remove(c)
	c.conn.SetReadLimit(4096)
	pongWait := h.PingInterval * 2
	c.conn.SetReadDeadline(time.Now().Add(pongWait))
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		c.conn.SetReadDeadline(time.Now().Add(pongWait))
		var op clientOp
		if json.Unmarshal(data, &op) != nil || !publicTopic.MatchString(op.Topic) {
			h.reply(c, map[string]any{"type": "error", "error": map[string]string{"code": db.EINVALID, "message": "unknown op or topic"}})
			continue
		}
		h.mu.Lock()
		switch op.Op {
		case "subscribe":
			h.subscribeLocked(c, op.Topic)
		case "unsubscribe":
			delete(c.topics, op.Topic)
			delete(h.topics[op.Topic], c)
		}
		h.mu.Unlock()
		h.reply(c, map[string]any{"type": op.Op + "d", "topic": op.Topic})
	}
}

func (h *Hub) reply(c *wsClient, v any) {
	b, _ := json.Marshal(v)
	h.mu.RLock()
	defer h.mu.RUnlock()
	if _, live := h.clients[c]; !live {
		return
	}
	select {
	case c.send <- b:
	default:
	}
}

func (h *Hub) subscribeLocked(c *wsClient, topic string) {
	if h.topics[topic] == nil {
		h.topics[topic] = map[*wsClient]struct{}{}
	}
	h.topics[topic][c] = struct{}{}
	c.topics[topic] = struct{}{}
}

func (h *Hub) writeLoop(c *wsClient) {
	ping := time.NewTicker(h.PingInterval)
	defer ping.Stop()
	defer c.conn.Close()
	for {
		select {
		case msg, ok := <-c.send:
			c.conn.SetWriteDeadline(time.Now().Add(h.WriteTimeout))
			if !ok {
				c.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "bye"))
				return
			}
			if err := c.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return
			}
		case <-ping.C:
			c.conn.SetWriteDeadline(time.Now().Add(h.WriteTimeout))
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}

// remove forgets the client and ends its connection; safe to call more than once.
func (h *Hub) remove(c *wsClient) {
	c.once.Do(func() {
		h.mu.Lock()
		delete(h.clients, c)
		for t := range c.topics {
			delete(h.topics[t], c)
			if len(h.topics[t]) == 0 {
				delete(h.topics, t)
			}
		}
		close(c.send)
		h.mu.Unlock()
		h.metrics.sockets.Dec()
		// A slow client may be stuck in a write; closing the socket frees it.
		time.AfterFunc(time.Second, func() { c.conn.Close() })
	})
}
