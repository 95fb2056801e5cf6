package scenarios

// The crowd's HTTP/1.1 client. Like bench.Client it keeps one keep-alive
// connection per worker and writes each request from bytes, but it reads
// what a browser's reads bring back and bench.Client refuses: answers
// without a body (304), chunked bodies, and the headers a reader cares about
// (ETag, Content-Encoding, Cache-Control, Set-Cookie).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// crowdTimeout bounds one request of the crowd, from the write to the last byte.
const crowdTimeout = 15 * time.Second

// acceptEncoding is what a browser says it can decode.
const acceptEncoding = "Accept-Encoding: gzip, deflate, br, zstd\r\n"

// crowdClient is one keep-alive connection per worker to host.
type crowdClient struct {
	host  string
	conns []*crowdConn
}

type crowdConn struct {
	c   net.Conn
	r   *bufio.Reader
	req []byte // the request being written, reused
	buf []byte // the last body, reused
}

// crowdAnswer is one answer. body is valid until the worker's next request;
// the header fields are filled only when the request asked for them.
type crowdAnswer struct {
	status       int
	body         []byte
	etag         string
	encoding     string
	cacheControl string
	setCookie    bool
}

func newCrowdClient(base string, workers int) (*crowdClient, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("crowd client: %q is not an http://host:port URL", base)
	}
	c := &crowdClient{host: u.Host, conns: make([]*crowdConn, workers)}
	for i := range c.conns {
		c.conns[i] = &crowdConn{}
	}
	return c, nil
}

func (c *crowdClient) Close() {
	for _, cc := range c.conns {
		cc.close()
	}
}

// do sends method path on worker w's connection with the header lines of
// head (each ending in CRLF) and reads the answer; headers says whether to
// keep its headers.
func (c *crowdClient) do(w int, method, path string, head []byte, headers bool) (crowdAnswer, error) {
	cc := c.conns[w]
	if cc.c == nil {
		conn, err := net.DialTimeout("tcp", c.host, 10*time.Second)
		if err != nil {
			return crowdAnswer{}, err
		}
		cc.c, cc.r = conn, bufio.NewReaderSize(conn, 8192)
	}
	q := append(cc.req[:0], method...)
	q = append(q, ' ')
	q = append(q, path...)
	q = append(q, " HTTP/1.1\r\nHost: "...)
	q = append(q, c.host...)
	q = append(q, "\r\n"...)
	q = append(q, head...)
	if method == "POST" {
		q = append(q, "Content-Length: 0\r\n"...)
	}
	q = append(q, "\r\n"...)
	cc.req = q
	cc.c.SetDeadline(time.Now().Add(crowdTimeout))
	if _, err := cc.c.Write(q); err != nil {
		cc.close()
		return crowdAnswer{}, err
	}
	a, keep, err := cc.read(method == "HEAD", headers)
	if err != nil || !keep {
		cc.close()
	}
	return a, err
}

var errCrowdBody = errors.New("crowd client: a body the client cannot read")

// read reads one answer: the status line, the headers, and the body by
// Content-Length, chunks, or up to the close.
func (cc *crowdConn) read(head, headers bool) (a crowdAnswer, keepAlive bool, err error) {
	line, err := cc.r.ReadSlice('\n')
	if err != nil {
		return a, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return a, false, fmt.Errorf("crowd client: bad status line %q", line)
	}
	if a.status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return a, false, fmt.Errorf("crowd client: bad status line %q", line)
	}
	length, chunked := -1, false
	keepAlive = true
	for {
		h, err := cc.r.ReadSlice('\n')
		if err != nil {
			return a, false, err
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
				return a, false, fmt.Errorf("crowd client: Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(value, []byte("close")):
			keepAlive = false
		case !headers:
		case bytes.EqualFold(name, []byte("ETag")):
			a.etag = string(value)
		case bytes.EqualFold(name, []byte("Content-Encoding")):
			a.encoding = string(value)
		case bytes.EqualFold(name, []byte("Cache-Control")):
			a.cacheControl = string(value)
		case bytes.EqualFold(name, []byte("Set-Cookie")):
			a.setCookie = true
		}
	}
	cc.buf = cc.buf[:0]
	switch {
	case head || a.status/100 == 1 || a.status == 204 || a.status == 304:
	case chunked:
		if cc.buf, err = readChunks(cc.r, cc.buf); err != nil {
			return a, false, err
		}
	case length >= 0:
		if cap(cc.buf) < length {
			cc.buf = make([]byte, length)
		}
		cc.buf = cc.buf[:length]
		if _, err := io.ReadFull(cc.r, cc.buf); err != nil {
			return a, false, err
		}
	default: // the body runs to the close
		b := bytes.NewBuffer(cc.buf)
		if _, err := io.Copy(b, io.LimitReader(cc.r, 64<<20)); err != nil {
			return a, false, err
		}
		cc.buf, keepAlive = b.Bytes(), false
	}
	a.body = cc.buf
	return a, keepAlive, nil
}

// readChunks appends a chunked body to dst (trailers are read and dropped).
func readChunks(r *bufio.Reader, dst []byte) ([]byte, error) {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return dst, err
		}
		size, _, _ := strings.Cut(strings.TrimSpace(string(line)), ";")
		n, err := strconv.ParseInt(size, 16, 64)
		if err != nil || n < 0 || n > 64<<20 {
			return dst, errCrowdBody
		}
		if n == 0 {
			for { // trailers up to the blank line
				t, err := r.ReadSlice('\n')
				if err != nil {
					return dst, err
				}
				if len(bytes.TrimRight(t, "\r\n")) == 0 {
					return dst, nil
				}
			}
		}
		start := len(dst)
		dst = append(dst, make([]byte, n)...)
		if _, err := io.ReadFull(r, dst[start:]); err != nil {
			return dst, err
		}
		if _, err := r.Discard(2); err != nil { // the chunk's CRLF
			return dst, err
		}
	}
}

func (cc *crowdConn) close() {
	if cc.c != nil {
		cc.c.Close()
		cc.c, cc.r = nil, nil
	}
}

// decodeBody is a body as the client reads it, decoded from its Content-Encoding.
func decodeBody(encoding string, body []byte) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
		return body, nil
	case "gzip":
		return fasthttp.AppendGunzipBytes(nil, body)
	case "br":
		return fasthttp.AppendUnbrotliBytes(nil, body)
	case "deflate":
		return fasthttp.AppendInflateBytes(nil, body)
	case "zstd":
		return fasthttp.AppendUnzstdBytes(nil, body)
	}
	return nil, fmt.Errorf("crowd client: unknown Content-Encoding %q", encoding)
}

// headBlock is the header lines a reader sends: its forwarded address, its
// session cookie when signed in (token ""; anonymous), what it can decode,
// and extra lines (each "Name: value").
func headBlock(from, token string, extra ...string) []byte {
	var b []byte
	if from != "" {
		b = append(b, "X-Forwarded-For: "+from+"\r\n"...)
	}
	if token != "" {
		b = append(b, "Cookie: seckill_session="+token+"\r\n"...)
	}
	b = append(b, acceptEncoding...)
	for _, e := range extra {
		b = append(b, e+"\r\n"...)
	}
	return b
}
