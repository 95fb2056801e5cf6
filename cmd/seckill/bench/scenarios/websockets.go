package scenarios

// The idle WebSocket bench: a child process (seckill bench-ws-clients) holds
// the sockets, so the server's memory per socket is measured alone.

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
)

// benchIdleWebSockets opens IdleWS sockets from a child process (so the
// clients' memory is not counted) and reports the server's memory per socket.
func benchIdleWebSockets(ctx context.Context, o *Options, t *benchTarget, r *bench.Report) error {
	if o.IdleWS == 0 {
		return nil
	}
	before, err := serverMemory(t)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.CommandContext(ctx, self, "bench-ws-clients", WSURL(t.URL), strconv.Itoa(o.IdleWS))
	child.Stderr = os.Stderr
	stdout, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		return err
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	line := make([]byte, 64)
	n, _ := stdout.Read(line) // the child says "ready N" once every socket is open
	if !strings.HasPrefix(string(line[:n]), "ready") {
		return fmt.Errorf("ws clients: %q", line[:n])
	}
	time.Sleep(500 * time.Millisecond)
	after, err := serverMemory(t)
	if err != nil {
		return err
	}
	per := (after - before) / float64(o.IdleWS) / 1024
	r.Extra["idle WebSocket memory"] = fmt.Sprintf("%.2f KiB per socket (%d sockets, server heap+stack %+.1f MiB)", per, o.IdleWS, (after-before)/(1<<20))
	if o.IdleWS >= 1000 { // fewer sockets drown in the collector's noise
		r.Checks = append(r.Checks, bench.Check{Name: "idle WebSocket ≤ 10 KiB", OK: per <= 10, Detail: fmt.Sprintf("%.2f KiB per socket", per)})
	}
	return nil
}

func WSURL(base string) string {
	u, _ := url.Parse(base)
	u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
	u.Path = "/ws"
	return u.String()
}

// wsClients is the hidden child mode: open n raw WebSocket connections,
// subscribe each to a topic, say "ready", then hold them until killed.
func wsClients(args []string) error {
	u, n, err := childArgs("bench-ws-clients WS_URL N", args)
	if err != nil {
		return err
	}
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		c, err := RawWebSocket(u, "goods:1", shopperAddr(1<<20+i))
		if err != nil {
			return fmt.Errorf("socket %d: %w", i, err)
		}
		conns = append(conns, c)
	}
	fmt.Printf("ready %d\n", len(conns))
	select {}
}

// RawWebSocket opens a WebSocket with a hand-written handshake and sends one
// subscribe frame; it costs the client a socket and nothing else.
// from is the client's address, forwarded as a proxy would (empty: none).
func RawWebSocket(u *url.URL, topic, from string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s\r\n", u.RequestURI(), u.Host, forwardedFor(from))
	buf := make([]byte, 1024)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), " 101 ") {
		c.Close()
		return nil, fmt.Errorf("handshake: %q %v", buf[:n], err)
	}
	c.SetReadDeadline(time.Time{})
	payload := []byte(`{"op":"subscribe","topic":"` + topic + `"}`)
	frame := []byte{0x81, 0x80 | byte(len(payload)), 0, 0, 0, 0} // masked text frame, zero mask
	_, err = c.Write(append(frame, payload...))
	return c, err
}

// forwardedFor is the X-Forwarded-For header line for from, or nothing.
func forwardedFor(from string) string {
	if from == "" {
		return ""
	}
	return "X-Forwarded-For: " + from + "\r\n"
}

// childArgs reads the URL and count a hidden child mode of the bench is started with.
func childArgs(usage string, args []string) (*url.URL, int, error) {
	if len(args) != 2 {
		return nil, 0, fmt.Errorf("usage: seckill %s", usage)
	}
	u, err := url.Parse(args[0])
	if err != nil {
		return nil, 0, err
	}
	n, err := strconv.Atoi(args[1])
	return u, n, err
}

// Child is the hidden child mode called name (bench-ws-clients,
// bench-slow-bodies: the bench starts its own binary again in them, so
// the clients' sockets cost this process nothing), or nil. The binary's
// main, or a test binary's TestMain, runs it before anything else.
// (bench-crowd-sockets runs from this package's init.)
func Child(name string) func(args []string) error {
	return map[string]func([]string) error{"bench-ws-clients": wsClients, "bench-slow-bodies": slowBodies}[name]
}
