package web

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/valyala/fasthttp"
)

// BodyLimit is the largest JSON or form body a request may carry (docs/OPERATIONS.md, "Abuse limits").
const BodyLimit = 64 << 10

// declaredTooLarge marks, on a request's headers, a body declared over
// BodyLimit: the server answers 413 without reading it. A client that sends
// the mark itself only has its own request refused.
const declaredTooLarge = "X-Seckill-Declared-Too-Large"

// headerDeclaredTooLarge is declaredTooLarge as fasthttp keeps it: bodies
// looks for it on every request.
var headerDeclaredTooLarge = headerKey(declaredTooLarge)

// headerReceived runs once a request's headers are read and before its body
// is. fasthttp streams bodies here (StreamRequestBody), prefetching up to
// 8 KiB and leaving the rest to bodies, so a client that declares a large
// body and trickles it holds no buffer of the declared size. A body declared
// over the limit is marked for bodies to refuse without reading it. A client
// that is already sending such a body would see its connection reset, not
// the 413, if the server closed under it; so up to drainLimit the declared
// length is kept and fasthttp, once the 413 is sent, reads the body and
// throws it away in small pieces, keeping the connection. A larger body, or
// one the client waits to send (Expect: 100-continue), is not read at all:
// its length is zeroed and the connection closes after the answer.
func headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if cl := h.ContentLength(); cl > BodyLimit {
		if limit, _ := bodyLimits(h.RequestURI()); cl <= limit {
			return fasthttp.RequestConfig{} // a picture upload may be larger
		}
		h.Set(declaredTooLarge, "1")
		if cl > drainLimit || len(h.Peek(fiber.HeaderExpect)) > 0 {
			h.SetContentLength(0)
			h.Del(fiber.HeaderExpect) // no 100 Continue for a body we refuse
			h.SetConnectionClose()
		}
	}
	return fasthttp.RequestConfig{}
}

// drainLimit is the largest refused body drained rather than cut off: what
// fasthttp discards of an unread streamed body before it closes instead.
const drainLimit = 256 << 10

// errEncoded is the answer to a request body sent compressed.
var errEncoded = db.Errorf(db.EINVALID, "send the request body without Content-Encoding")

// errTooLarge is the answer to a body over BodyLimit.
var errTooLarge = db.Errorf(db.ETOOLARGE, "the request body is larger than 64 KiB")

// bodies reads the streamed request body into memory, at most BodyLimit
// bytes, before any handler runs, so handlers see a plain body. A body over
// the limit (declared, or chunked and found while reading) is refused with
// 413; one that breaks off or arrives too slowly for ReadTimeout with 400 or
// 408. Memory grows with what arrives, not with what was declared.
func bodies(c *fiber.Ctx) error {
	req := c.Request()
	if len(req.Header.PeekCanonical(headerDeclaredTooLarge)) > 0 {
		_, errTooLarge := bodyLimits(req.URI().Path())
		return errTooLarge // the body is left unread (see headerReceived)
	}
	// Fiber would inflate a compressed body with no bound (a 64 KiB gzip
	// can become a gigabyte), so request bodies come uncompressed.
	if enc := req.Header.ContentEncoding(); len(enc) > 0 && !strings.EqualFold(string(enc), "identity") {
		c.Set(fiber.HeaderConnection, "close")
		return errEncoded
	}
	cl := req.Header.ContentLength()
	if !req.IsBodyStream() || cl == 0 {
		return c.Next()
	}
	limit, errTooLarge := bodyLimits(req.URI().Path())
	size := 512
	if cl > 0 {
		size = min(cl, 8<<10)
	}
	body, err := readLimited(req.BodyStream(), size, limit)
	if err != nil || len(body) > limit {
		// Leave the rest of the body unread and the connection closed.
		c.Set(fiber.HeaderConnection, "close")
		var ne net.Error
		switch {
		case err == nil:
			return errTooLarge
		case errors.As(err, &ne) && ne.Timeout():
			return fiber.ErrRequestTimeout
		default:
			return db.Errorf(db.EINVALID, "malformed request body")
		}
	}
	req.SetBodyRaw(body)
	return c.Next()
}

// readLimited reads r to its end, or to limit+1 bytes, in a buffer that
// starts at size and grows as bytes arrive.
func readLimited(r io.Reader, size, limit int) ([]byte, error) {
	b := make([]byte, 0, size)
	for len(b) <= limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):min(cap(b), limit+1)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}
