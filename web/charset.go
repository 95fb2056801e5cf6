package web

import (
	"bytes"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// utf8Text names UTF-8 on every text answer that does not name a charset
// (CSS, JavaScript, SVG, plain text, any text/*): a browser guesses
// Latin-1 otherwise, and app.css's " ●" shows as "â—". Errors are rendered
// here, first, so the error pages are covered too.
func utf8Text(c *fiber.Ctx) error {
	if err := c.Next(); err != nil {
		if herr := c.App().Config().ErrorHandler(c, err); herr != nil {
			return herr
		}
	}
	addUTF8(&c.Response().Header)
	return nil
}

// addUTF8 appends "; charset=utf-8" to a text Content-Type that has no charset.
func addUTF8(h *fasthttp.ResponseHeader) {
	ct := h.ContentType()
	if !isText(ct) || bytes.Contains(bytes.ToLower(ct), []byte("charset=")) {
		return
	}
	h.SetContentType(string(ct) + "; charset=utf-8")
}

func isText(ct []byte) bool {
	mt := ct
	if i := bytes.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	mt = bytes.ToLower(bytes.TrimSpace(mt))
	switch {
	case bytes.HasPrefix(mt, []byte("text/")):
		return true
	case bytes.HasSuffix(mt, []byte("javascript")), bytes.HasSuffix(mt, []byte("+xml")),
		bytes.Equal(mt, []byte("application/xml")):
		return true
	}
	return false
}
