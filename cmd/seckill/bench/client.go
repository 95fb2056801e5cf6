package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// Client is the load's HTTP/1.1 client: one keep-alive connection per
// worker and a request written straight from bytes. The generator shares the
// machine with the server it measures, so every microsecond it spends is one
// the server loses; general clients pay for pooling, header maps and
// deadlines per request that a closed loop of fixed requests does not need.
// It reads only what the bench needs: the status and a Content-Length body.
type Client struct {
	host  string
	conns []*clientConn
}

type clientConn struct {
	c   net.Conn
	r   *bufio.Reader
	req []byte // the request being written, reused
	buf []byte // the last response body, reused
}

// NewClient makes a client of base (http://host:port) for workers workers;
// each worker's connection is dialled on its first request.
func NewClient(base string, workers int) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("bench client: %q is not an http://host:port URL", base)
	}
	c := &Client{host: u.Host, conns: make([]*clientConn, workers)}
	for i := range c.conns {
		c.conns[i] = &clientConn{}
	}
	return c, nil
}

// Close closes every connection.
func (c *Client) Close() {
	for _, cc := range c.conns {
		cc.close()
	}
}

var errUnsupported = errors.New("bench client: response without Content-Length")

// Do sends one request on worker w's connection and returns the status and
// body; the body is valid until w's next request. bearer may be empty.
func (c *Client) Do(w int, method, path, bearer string, body []byte) (int, []byte, error) {
	return c.DoFrom(w, "", method, path, bearer, body)
}

// DoFrom is Do on behalf of the client address from, sent as
// X-Forwarded-For as a proxy would (empty: none). The server believes it
// when the load's own address is among its TRUSTED_PROXIES.
func (c *Client) DoFrom(w int, from, method, path, bearer string, body []byte) (int, []byte, error) {
	return c.DoHeaders(w, from, method, path, bearer, nil, body)
}

// DoHeaders is DoFrom with extra header lines, each "Name: value" (a proof
// of work, an admission token).
func (c *Client) DoHeaders(w int, from, method, path, bearer string, headers []string, body []byte) (int, []byte, error) {
	reused := c.conns[w].c != nil
	status, b, err := c.doOnce(w, from, method, path, bearer, headers, body)
	if err != nil && reused && (method == "GET" || method == "HEAD") {
		// A kept-alive connection the server closed while it sat idle (a
		// set-up connection through a long load on a busy machine): a
		// read is sent again on a fresh one, as net/http does.
		return c.doOnce(w, from, method, path, bearer, headers, body)
	}
	return status, b, err
}

// doOnce is DoHeaders on worker w's connection as it is, dialled if closed.
func (c *Client) doOnce(w int, from, method, path, bearer string, headers []string, body []byte) (int, []byte, error) {
	cc := c.conns[w]
	if cc.c == nil {
		conn, err := net.DialTimeout("tcp", c.host, 10*time.Second)
		if err != nil {
			return 0, nil, err
		}
		cc.c, cc.r = conn, bufio.NewReaderSize(conn, 4096)
	}
	q := append(cc.req[:0], method...)
	q = append(q, ' ')
	q = append(q, path...)
	q = append(q, " HTTP/1.1\r\nHost: "...)
	q = append(q, c.host...)
	if bearer != "" {
		q = append(q, "\r\nAuthorization: Bearer "...)
		q = append(q, bearer...)
	}
	if from != "" {
		q = append(q, "\r\nX-Forwarded-For: "...)
		q = append(q, from...)
	}
	for _, h := range headers {
		q = append(q, "\r\n"...)
		q = append(q, h...)
	}
	q = append(q, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	q = strconv.AppendInt(q, int64(len(body)), 10)
	q = append(q, "\r\n\r\n"...)
	q = append(q, body...)
	cc.req = q
	if _, err := cc.c.Write(q); err != nil {
		cc.close()
		return 0, nil, err
	}
	status, b, keep, err := cc.readResponse()
	if err != nil || !keep {
		cc.close()
	}
	return status, b, err
}

// readResponse reads a status line, headers and a Content-Length body.
func (cc *clientConn) readResponse() (status int, body []byte, keepAlive bool, err error) {
	line, err := cc.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, false, fmt.Errorf("bench client: bad status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, nil, false, fmt.Errorf("bench client: bad status line %q", line)
	}
	length, keepAlive := -1, true
	for {
		h, err := cc.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, nil, false, fmt.Errorf("bench client: Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(value, []byte("close")):
			keepAlive = false
		}
	}
	if length < 0 {
		return 0, nil, false, errUnsupported
	}
	if cap(cc.buf) < length {
		cc.buf = make([]byte, length)
	}
	cc.buf = cc.buf[:length]
	if _, err := io.ReadFull(cc.r, cc.buf); err != nil {
		return 0, nil, false, err
	}
	return status, cc.buf, keepAlive, nil
}

func (cc *clientConn) close() {
	if cc.c != nil {
		cc.c.Close()
		cc.c, cc.r = nil, nil
	}
}
