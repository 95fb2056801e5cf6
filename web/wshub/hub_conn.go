package wshub

import (
	"bufio"
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gorilla/websocket"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
)

// Handle upgrades GET /ws to a WebSocket. The caller is known from ?token=,
// the session cookie or a bearer token; anonymous clients may watch public
// topics. Every refusal is answered here, with the contract's error, before
// the connection is handed to gorilla's Upgrader.
func (h *Hub) Handle(c *fiber.Ctx) error {
	claims, ip := h.Identify(c)
	if token := c.Query("token"); token != "" {
		// The query's text lives in a buffer the next request reuses, and the
		// claims outlive this one.
		cl, err := h.Tokens.Verify(strings.Clone(token))
		if err != nil {
			return err
		}
		claims = cl
	}
	userID := claims.UserID
	var anonIP netip.Addr
	if userID == 0 && h.MaxAnonPerIP > 0 {
		anonIP = ip
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
		// The socket is in the hub before the 101, with its own topics and
		// its user's bucket followed: every event published once the client
		// sees the socket open (say, after it moved here from another
		// process) reaches it, queued until the socket can be written.
		c := h.adopt(claims, anonIP)
		br := bufio.NewReaderSize(conn, readBuffer)
		ws, err := h.upgrader.Upgrade(&hijacked{conn, bufio.NewReadWriter(br, bufio.NewWriterSize(conn, 256))}, r, nil)
		if err != nil {
			h.remove(c) // frees its anonymous slot and its bucket
			conn.Close()
			return
		}
		h.attach(c, ws, br)
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

// adopt registers a socket about to be upgraded, with the topics it follows
// from the start, and waits until this process follows its user's bucket; an
// anonymous one's slot under its address's cap was taken by Handle. Its
// writes wait (it is marked scheduled) until attach has the connection.
func (h *Hub) adopt(claims model.Claims, anonIP netip.Addr) *wsClient {
	c := &wsClient{userID: claims.UserID, claims: claims, topics: map[string]struct{}{}, anonIP: anonIP, scheduled: true}
	c.lastSeen.Store(time.Now().UnixNano())
	if c.userID > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), subscribeWait)
		h.buckets.hold(ctx, c.userID)
		cancel()
	}
	h.mu.Lock()
	h.clients[c] = struct{}{}
	for _, t := range ownTopics(claims) {
		h.subscribeLocked(c, t)
	}
	h.mu.Unlock()
	h.sockets.Inc()
	if h.Hello != nil {
		if m := h.Hello(); m != nil {
			h.enqueue(c, outMsg{pm: mustPrepare(websocket.TextMessage, m)})
		}
	}
	return c
}

// attach gives an adopted client its upgraded connection, writes what was
// queued for it meanwhile and starts reading it.
func (h *Hub) attach(c *wsClient, ws *websocket.Conn, br *bufio.Reader) {
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
	c.mu.Lock()
	c.ws, c.br = ws, br
	gone := c.closed // dropped meanwhile (the hub closed, or it fell behind)
	c.mu.Unlock()
	if gone {
		ws.Close()
		return
	}
	h.flush(c) // what arrived meanwhile; then writes are scheduled as usual
	if err := h.poll.add(c); err != nil {
		h.Log.Warn("watch websocket", "err", err)
		h.remove(c)
	}
}

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

// remove forgets the client and closes its socket; safe to call more than once.
func (h *Hub) remove(c *wsClient) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.queue = nil
	ws := c.ws // nil while an adopted socket is being upgraded
	c.mu.Unlock()
	h.mu.Lock()
	delete(h.clients, c)
	h.releaseAnonLocked(c.anonIP)
	for t := range c.topics {
		h.unsubscribeLocked(c, t)
	}
	h.mu.Unlock()
	if c.userID > 0 {
		h.buckets.release(c.userID)
	}
	h.sockets.Dec()
	h.poll.remove(c)
	if ws != nil {
		ws.Close() // also frees a writer stuck on this client
	}
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
