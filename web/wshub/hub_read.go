package wshub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gorilla/websocket"
	"github.com/seckill/seckill/db"
)

// Reading what clients send: their subscribe and unsubscribe ops, read by
// a few workers when the poller says a socket is readable (hub.go has the
// hub and its writers, hub_conn.go the upgrade and each connection's life).

// readable is called by the poller when a client's socket has data or hung up.
func (h *Hub) readable(c *wsClient) {
	select {
	case h.reads <- c:
	default:
		go h.readReady(c)
	}
}

// readWorker reads the clients the poller found readable until ctx ends.
func (h *Hub) readWorker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
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
	// A Close's echo is queued by its handler; the writer closes the socket
	// after it. gorilla reports a connection that just ended (no Close frame)
	// as a CloseError too, with 1006, which no frame may carry: that socket
	// goes now, or it would hold its anonymous slot until the keepalive.
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code == websocket.CloseAbnormalClosure {
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
