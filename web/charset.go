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
	if !isText(ct) || containsLower(ct, "charset=") {
		return
	}
	h.SetContentType(string(ct) + "; charset=utf-8")
}

func isText(ct []byte) bool {
	mt := ct
	if i := bytes.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	mt = bytes.TrimSpace(mt)
	if !ascii(mt) {
		// Unicode case mapping may turn a byte sequence into ASCII
		// letters (the Kelvin sign into k): keep bytes.ToLower's reading.
		mt = bytes.ToLower(mt)
	}
	switch {
	case hasPrefixLower(mt, "text/"):
		return true
	case hasSuffixLower(mt, "javascript"), hasSuffixLower(mt, "+xml"),
		len(mt) == len("application/xml") && hasPrefixLower(mt, "application/xml"):
		return true
	}
	return false
}

// The Content-Type of every answer is read here, so these compare ASCII
// letters case-insensitively in place instead of lowering a copy (two
// allocations an answer). want is lower case.

// containsLower reports whether the lower-cased b contains want.
func containsLower(b []byte, want string) bool {
	if !ascii(b) {
		return bytes.Contains(bytes.ToLower(b), []byte(want))
	}
	for i := 0; i+len(want) <= len(b); i++ {
		if hasPrefixLower(b[i:], want) {
			return true
		}
	}
	return false
}

// hasPrefixLower reports whether b, its ASCII letters lower-cased, begins with want.
func hasPrefixLower(b []byte, want string) bool {
	if len(b) < len(want) {
		return false
	}
	for i := 0; i < len(want); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != want[i] {
			return false
		}
	}
	return true
}

// hasSuffixLower reports whether b, its ASCII letters lower-cased, ends with want.
func hasSuffixLower(b []byte, want string) bool {
	return len(b) >= len(want) && hasPrefixLower(b[len(b)-len(want):], want)
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
