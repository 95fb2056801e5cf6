package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The live hub speaks RFC 6455: a Close is echoed, a ping is answered, and a
// message may come in fragments up to the 4 KiB cap.

// A client's Close comes back with the client's code, and its place is freed.
func TestWSCloseIsEchoed(t *testing.T) {
	a := startApp(t)
	c := dialWS(t, a.URL, "")
	subscribe(t, c, "goods:3")
	if err := c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4001, "bye"), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, _, err := c.ReadMessage()
	if !websocket.IsCloseError(err, 4001) {
		t.Fatalf("after the client's Close 4001: %v, want the Close echoed with 4001", err)
	}
	eventually(t, 5*time.Second, "the closed socket to be forgotten", func() bool { return a.Web.Hub.Clients() == 0 })
}

// A ping is answered with a pong carrying its data; a socket that has only
// pinged is still read after a read window has passed.
func TestWSPingIsAnswered(t *testing.T) {
	const window = 300 * time.Millisecond
	a := startAbuseApp(t, nil, func(m *Main) { m.SocketReadWindow = window })
	c := dialWS(t, a.URL, "")
	pongs := make(chan string, 1)
	c.SetPongHandler(func(data string) error {
		pongs <- data
		return nil
	})
	events := make(chan map[string]any, 8)
	go func() {
		defer close(events)
		for {
			var ev map[string]any
			if c.ReadJSON(&ev) != nil {
				return
			}
			events <- ev
		}
	}()

	if err := c.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-pongs:
		if got != "are you there" {
			t.Fatalf("pong %q, want the ping's data", got)
		}
	case <-events:
		t.Fatal("the socket ended instead of answering the ping")
	case <-time.After(15 * time.Second):
		t.Fatal("no pong")
	}

	time.Sleep(3 * window) // a read that waited on after the ping would have failed by now
	if err := c.WriteJSON(map[string]string{"op": "subscribe", "topic": "goods:4"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the socket was closed after it pinged")
		}
		if ev["type"] != "subscribed" || ev["topic"] != "goods:4" {
			t.Fatalf("answer to subscribe: %v", ev)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no answer to subscribe after the ping")
	}
}

// dialFragmenting opens a socket whose messages leave in frames of at most
// 512 bytes.
func dialFragmenting(t *testing.T, base string) (*websocket.Conn, func(msg []byte) error) {
	t.Helper()
	d := websocket.Dialer{WriteBufferSize: 512, HandshakeTimeout: 10 * time.Second}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, func(msg []byte) error {
		w, err := c.NextWriter(websocket.TextMessage)
		if err != nil {
			return err
		}
		if _, err := w.Write(msg); err != nil {
			return err
		}
		return w.Close()
	}
}

// A subscribe sent in fragments under 4 KiB in all is put together and
// answered.
func TestWSFragmentedSubscribeIsReassembled(t *testing.T) {
	a := startApp(t)
	c, send := dialFragmenting(t, a.URL)
	if err := send([]byte(`{"op":"subscribe","topic":"goods:9"` + strings.Repeat(" ", 3500) + `}`)); err != nil { // 8 frames
		t.Fatal(err)
	}
	waitEvent(t, c, func(ev map[string]any) bool { return ev["type"] == "subscribed" && ev["topic"] == "goods:9" })
}

// A message over 4 KiB closes the socket with 1009 though each of its
// fragments is small.
func TestWSFragmentedMessageOverCapCloses1009(t *testing.T) {
	a := startApp(t)
	c, send := dialFragmenting(t, a.URL)
	if err := send(bytes.Repeat([]byte(" "), 5000)); err != nil { // 10 frames
		t.Logf("sending (the server may close before the last fragments): %v", err)
	}
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	var err error
	for err == nil {
		var msg []byte
		if _, msg, err = c.ReadMessage(); err == nil {
			t.Logf("before the close: %s", msg)
		}
	}
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("after 5000 bytes in 512-byte fragments: %v, want close 1009", err)
	}
	eventually(t, 5*time.Second, "the closed socket to be forgotten", func() bool { return a.Web.Hub.Clients() == 0 })
}
