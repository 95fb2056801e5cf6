package handlers

import (
	"bytes"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/seckill/seckill/static"
	"github.com/valyala/fasthttp"
)

// Shared reads: what every shopper reads alike (the front page and a goods
// page for a reader who is not signed in, the public JSON) is rendered once
// per change and language and served to everyone from memory, with an ETag
// (If-None-Match: 304) and its gzip and brotli forms made once beside it.
// Who is anonymous gets Cache-Control public (a proxy may keep it a second,
// docs/ops/nginx.conf); who is signed in gets private: a shopper's page is
// kept here once for every shopper, their name and token spliced in per
// request (handlers/splice.go); a merchant's is rendered for them (sendPrivate).

// Cache-Control of shared reads.
const (
	cachePublic  = "public, max-age=1, stale-while-revalidate=5"
	cachePrivate = "private, max-age=0, must-revalidate"
)

// doc is a response body made once and served to many.
type doc struct {
	version string // the inputs' version it was made at
	ctype   string
	body    []byte
	etag    string
	gzip    atomic.Pointer[[]byte] // made on first demand
	br      atomic.Pointer[[]byte]
	spliced atomic.Pointer[splicedDoc] // a signed-in page cut at its markers (handlers/splice.go)
	mu      sync.Mutex                 // one maker of gzip, br and spliced at a time
}

// splicedForm is the document cut at its markers, made on first demand.
func (d *doc) splicedForm() (*splicedDoc, error) {
	if s := d.spliced.Load(); s != nil {
		return s, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.spliced.Load(); s != nil {
		return s, nil
	}
	s, err := newSplicedDoc(d.body)
	if err != nil {
		return nil, err
	}
	d.spliced.Store(s)
	return s, nil
}

// docs are the shared documents of one process, by name (route, item, language).
type docs struct {
	mu sync.Mutex
	m  map[string]*docSlot
}

// docSlot holds one name's document; its own lock lets one reader render
// while others of the same name wait, and readers of other names go on.
// A reader of the version held takes no lock.
type docSlot struct {
	mu  sync.Mutex // held while rendering
	doc atomic.Pointer[doc]
}

// docsMax bounds the names kept: past it the cache starts again (IDs a
// reader makes up are answered 404 before they get here; this is a backstop).
const docsMax = 8192

// get is the document of name at version, rendered by make when the one held
// is of another version. Name and version may alias a caller's buffer: what
// is kept is copied.
func (d *docs) get(name, version, ctype string, make func() ([]byte, error)) (*doc, error) {
	d.mu.Lock()
	if d.m == nil {
		d.m = map[string]*docSlot{}
	}
	slot := d.m[name]
	if slot == nil {
		if len(d.m) >= docsMax {
			clear(d.m)
		}
		slot = &docSlot{}
		d.m[strings.Clone(name)] = slot
	}
	d.mu.Unlock()
	if held := slot.doc.Load(); held != nil && held.version == version {
		return held, nil
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if held := slot.doc.Load(); held != nil && held.version == version {
		return held, nil
	}
	body, err := make()
	if err != nil {
		return nil, err
	}
	made := newDoc(strings.Clone(version), ctype, body)
	slot.doc.Store(made)
	return made, nil
}

func newDoc(version, ctype string, body []byte) *doc {
	h := fnv.New64a()
	h.Write(body)
	return &doc{version: version, ctype: ctype, body: body, etag: `W/"` + strconv.FormatUint(h.Sum64(), 36) + `"`}
}

// send answers the request with the document: 304 when the reader holds
// it already, else its body in the best encoding the reader accepts.
func (d *doc) send(c *fiber.Ctx, cacheControl string, vary ...string) error {
	// Every shared read passes here: headers are set in the form fasthttp
	// keeps them (no names to normalise) and the request's read likewise.
	h := &c.Response().Header
	h.SetCanonical(headerCacheControl, utils.UnsafeBytes(cacheControl))
	h.SetCanonical(headerETag, utils.UnsafeBytes(d.etag))
	varyEncoding(c, vary)
	if etagMatches(utils.UnsafeString(c.Request().Header.PeekCanonical(headerIfNoneMatch)), d.etag) {
		// No body: a 304 sends none (c.SendStatus would take a buffer
		// from the pool for a text that never leaves).
		c.Status(fiber.StatusNotModified)
		return nil
	}
	h.SetContentType(d.ctype)
	if len(d.body) < compressMin {
		return c.Send(d.body)
	}
	switch encodingOf(utils.UnsafeString(c.Request().Header.PeekCanonical(headerAcceptEncoding))) {
	case "br":
		h.SetContentEncoding("br")
		return c.Send(d.compressed("br"))
	case "gzip":
		h.SetContentEncoding("gzip")
		return c.Send(d.compressed("gzip"))
	}
	return c.Send(d.body)
}

// Header names as fasthttp keeps them (ETag is sent as Etag), and the Vary
// values shared reads answer with.
var (
	headerCacheControl   = headerKey(fiber.HeaderCacheControl)
	headerETag           = headerKey(fiber.HeaderETag)
	headerVary           = headerKey(fiber.HeaderVary)
	headerIfNoneMatch    = headerKey(fiber.HeaderIfNoneMatch)
	headerAcceptEncoding = headerKey(fiber.HeaderAcceptEncoding)
	varyLanguage         = []byte(fiber.HeaderAcceptLanguage + ", " + fiber.HeaderCookie)
	varyEncodingOnly     = []byte(fiber.HeaderAcceptEncoding)
	varyLanguageEncoding = []byte(fiber.HeaderAcceptLanguage + ", " + fiber.HeaderCookie + ", " + fiber.HeaderAcceptEncoding)
)

// varyEncoding adds vary and Accept-Encoding to the answer's Vary header,
// as c.Vary does. What the request has passed leaves the header empty (a
// static file) or as Language set it; those two are answered with the
// value c.Vary would make, without making it again.
func varyEncoding(c *fiber.Ctx, vary []string) {
	h := &c.Response().Header
	switch held := h.PeekCanonical(headerVary); {
	case len(held) == 0 && len(vary) == 0:
		h.SetCanonical(headerVary, varyEncodingOnly)
	case string(held) == string(varyLanguage) && languageVaried(vary):
		h.SetCanonical(headerVary, varyLanguageEncoding)
	default:
		c.Vary(append(vary, fiber.HeaderAcceptEncoding)...)
	}
}

// headerKey is a header's name as fasthttp keeps it.
func headerKey(name string) []byte { return fasthttp.AppendNormalizedHeaderKey(nil, name) }

// languageVaried reports whether each of names is already in varyLanguage.
func languageVaried(names []string) bool {
	for _, n := range names {
		if n != fiber.HeaderAcceptLanguage && n != fiber.HeaderCookie {
			return false
		}
	}
	return true
}

// compressMin is the least body worth compressing.
const compressMin = 512

func (d *doc) compressed(enc string) []byte {
	held := &d.gzip
	if enc == "br" {
		held = &d.br
	}
	if b := held.Load(); b != nil {
		return *b
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if b := held.Load(); b != nil {
		return *b
	}
	var b []byte
	if enc == "br" {
		b = fasthttp.AppendBrotliBytesLevel(nil, d.body, fasthttp.CompressBrotliDefaultCompression)
	} else {
		b = fasthttp.AppendGzipBytesLevel(nil, d.body, fasthttp.CompressDefaultCompression)
	}
	held.Store(&b)
	return b
}

// encodingOf is the encoding to answer in: br, gzip or "" (identity), as
// the reader's Accept-Encoding ae allows (a q of 0 refuses one).
func encodingOf(ae string) string {
	if ae == "" {
		return ""
	}
	var gzip bool
	for rest, more := ae, true; more; {
		var part string
		part, rest, more = strings.Cut(rest, ",")
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
				continue
			}
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "br":
			return "br"
		case "gzip":
			gzip = true
		}
	}
	if gzip {
		return "gzip"
	}
	return ""
}

// etagMatches reports whether an If-None-Match header names etag (weakly, as
// RFC 9110 compares for GET): "*" or a list of tags. Anything it cannot
// read is no match, so the full answer goes out.
func etagMatches(header, etag string) bool {
	if header == "" || len(header) > 1024 {
		return false
	}
	if strings.TrimSpace(header) == "*" {
		return true
	}
	want := strings.TrimPrefix(etag, "W/")
	for rest, more := header, true; more; {
		var t string
		t, rest, more = strings.Cut(rest, ",")
		if strings.TrimPrefix(strings.TrimSpace(t), "W/") == want {
			return true
		}
	}
	return false
}

// sendPrivate answers a body made for this reader alone (a signed-in
// reader's page): private, with an ETag of its bytes, so a reload of an
// unchanged page is still a 304.
func sendPrivate(c *fiber.Ctx, status int, ctype string, body []byte) error {
	if status != fiber.StatusOK {
		c.Status(status).Set(fiber.HeaderContentType, ctype)
		return c.Send(body)
	}
	return newDoc("", ctype, body).send(c, cachePrivate, fiber.HeaderCookie)
}

// renderBytes renders a templ component into bytes in the request's language.
func renderBytes(c *fiber.Ctx, comp templ.Component) ([]byte, error) {
	var b bytes.Buffer
	if err := comp.Render(c.UserContext(), &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// jsonBytes encodes v as the API's JSON answers do.
func jsonBytes(c *fiber.Ctx, v any) ([]byte, error) {
	return c.App().Config().JSONEncoder(v)
}

// Content types of shared documents.
const (
	typeHTML = "text/html; charset=utf-8"
	typeJSON = "application/json"
)

// sendShared answers public JSON: the document of name at version, made by
// make when it is not held; an empty version (a read the catalog does not
// hold in memory, or one made for its reader alone) is made for this
// request and not kept.
func (h *Site) sendShared(c *fiber.Ctx, name, version string, make func() ([]byte, error)) error {
	cc := cachePublic
	if _, signedIn := ClaimsOf(c); signedIn {
		cc = cachePrivate
	}
	if version == "" {
		body, err := make()
		if err != nil {
			return err
		}
		return newDoc("", typeJSON, body).send(c, cc)
	}
	d, err := h.docs.get(name, version, typeJSON, make)
	if err != nil {
		return err
	}
	return d.send(c, cc)
}

// staticDocs are the embedded files as documents, made once each (their
// compressed forms on first demand).
var staticDocs sync.Map // *static.Asset → *doc

// cacheImmutable is the lifetime of a file whose name holds its content's hash.
const (
	cacheImmutable = "public, max-age=31536000, immutable"
	cacheStatic    = "public, max-age=3600"
)

// StaticFile serves an embedded file: GET /static/{name}. A content-hashed
// name (what pages link, static.URL) may be kept a year; the plain name an hour.
func StaticFile(c *fiber.Ctx) error {
	a, immutable, ok := static.Lookup(c.Params("name"))
	if !ok {
		return c.SendStatus(fiber.StatusNotFound)
	}
	d, ok := staticDocs.Load(a)
	if !ok {
		d, _ = staticDocs.LoadOrStore(a, newDoc("", a.Type, a.Data))
	}
	cc := cacheStatic
	if immutable {
		cc = cacheImmutable
	}
	return d.(*doc).send(c, cc)
}
