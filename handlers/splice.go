package handlers

import (
	"bytes"
	"compress/flate"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"hash/fnv"
	"html"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/valyala/fasthttp"
)

// A signed-in shopper's page is the same for every shopper but for the top
// bar: their name and their session's CSRF token. It is rendered once per
// change (as the anonymous page is) with two markers in their places, cut
// at the markers into segments, and each request splices its reader's two
// values in (the reader's orders and reminders are fetched by the page's
// script: static/goods.js, static/remind_picker.js).
//
// Compressed, the same holds: each segment is deflated once on its own
// (a fresh compressor, ended with a sync flush, so no segment refers back
// into another and each ends on a byte), and a request's gzip body is those
// blocks with its values between them as stored blocks, a final empty
// block, and the CRC of the whole: no compressor runs per request.

// The markers are made at random when the process starts, so no title a
// merchant types can be one.
var (
	markUser = randomMark("user")
	markCSRF = randomMark("csrf")
)

func randomMark(what string) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "SECKILL" + what + hex.EncodeToString(b[:])
}

// splicedDoc is a page cut at its markers.
type splicedDoc struct {
	parts [][]byte // len(holes)+1 segments
	holes []int    // between parts[i] and parts[i+1]: holeUser or holeCSRF
	gz    [][]byte // each part deflated on its own, ending on a sync flush
	etag  uint64   // the whole page's hash (markers included)
	size  int      // the parts' length
}

const (
	holeUser = iota
	holeCSRF
)

// newSplicedDoc cuts body at every marker.
func newSplicedDoc(body []byte) (*splicedDoc, error) {
	d := &splicedDoc{}
	h := fnv.New64a()
	h.Write(body)
	d.etag = h.Sum64()
	user, csrf := []byte(markUser), []byte(markCSRF)
	for rest := body; ; {
		iu, ic := bytes.Index(rest, user), bytes.Index(rest, csrf)
		if iu < 0 && ic < 0 {
			d.parts = append(d.parts, rest)
			break
		}
		if iu >= 0 && (ic < 0 || iu < ic) {
			d.parts, d.holes, rest = append(d.parts, rest[:iu]), append(d.holes, holeUser), rest[iu+len(user):]
		} else {
			d.parts, d.holes, rest = append(d.parts, rest[:ic]), append(d.holes, holeCSRF), rest[ic+len(csrf):]
		}
	}
	for _, p := range d.parts {
		d.size += len(p)
		var b bytes.Buffer
		w, err := flate.NewWriter(&b, flate.DefaultCompression)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(p); err != nil {
			return nil, err
		}
		if err := w.Flush(); err != nil { // a sync flush: byte-aligned, not final
			return nil, err
		}
		d.gz = append(d.gz, b.Bytes())
	}
	return d, nil
}

// send answers the page for the reader named user with their CSRF token:
// private, with an ETag of the page and the two values, gzip when accepted.
// Every signed-in view passes here: the ETag is made in place and the body
// written straight into the response's own buffer, so a view allocates
// nothing of its size.
func (d *splicedDoc) send(c *fiber.Ctx, user, csrf string) error {
	values := [2]string{holeUser: html.EscapeString(user), holeCSRF: html.EscapeString(csrf)}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], d.etag)
	sum := fnvAdd(fnvAdd(fnvAdd(fnvAdd(fnvOffset, n[:]), values[holeUser]), "\x00"), values[holeCSRF])
	var tag [32]byte
	etag := strconv.AppendUint(append(tag[:0], `W/"s`...), sum, 36)
	etag = append(etag, '"')

	resp := c.Response()
	rh := &resp.Header
	rh.SetCanonical(headerCacheControl, utils.UnsafeBytes(cachePrivate))
	rh.SetCanonical(headerETag, etag)
	varyEncoding(c, varyCookie)
	if etagMatches(utils.UnsafeString(c.Request().Header.PeekCanonical(headerIfNoneMatch)), utils.UnsafeString(etag)) {
		c.Status(fiber.StatusNotModified)
		return nil
	}
	rh.SetContentType(typeHTML)
	resp.ResetBody()
	if encodingOf(utils.UnsafeString(c.Request().Header.PeekCanonical(headerAcceptEncoding))) == "" {
		for i, p := range d.parts {
			resp.AppendBody(p)
			if i < len(d.holes) {
				resp.AppendBodyString(values[d.holes[i]])
			}
		}
		return nil
	}
	rh.SetContentEncoding("gzip")
	d.gzip(resp, values)
	return nil
}

// varyCookie is what a signed-in page varies by beside the encoding.
var varyCookie = []string{fiber.HeaderCookie}

// FNV-1a, 64 bits (hash/fnv's), over strings or bytes without a hasher.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd[T string | []byte](h uint64, s T) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// gzip writes the page with values in its holes to out as one gzip member
// (RFC 1952): the parts' deflate blocks, each value a stored block (RFC 1951
// 3.2.4), a final empty stored block, then the CRC-32 and length of the whole.
func (d *splicedDoc) gzip(out *fasthttp.Response, values [2]string) {
	out.AppendBody([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}) // deflate, no flags, no time, unknown OS
	crc := uint32(0)
	total := 0
	for i, g := range d.gz {
		out.AppendBody(g)
		crc = crc32.Update(crc, crc32.IEEETable, d.parts[i])
		total += len(d.parts[i])
		if i < len(d.holes) {
			v := values[d.holes[i]]
			for len(v) > 0 { // a stored block holds at most 65535 bytes
				chunk := v[:min(len(v), 65535)]
				out.AppendBody([]byte{0, byte(len(chunk)), byte(len(chunk) >> 8), ^byte(len(chunk)), ^byte(len(chunk) >> 8)})
				out.AppendBodyString(chunk)
				crc = crc32.Update(crc, crc32.IEEETable, utils.UnsafeBytes(chunk))
				total += len(chunk)
				v = v[len(chunk):]
			}
		}
	}
	var tail [13]byte
	end := append(tail[:0], 1, 0, 0, 0xff, 0xff) // the final block, stored and empty
	end = binary.LittleEndian.AppendUint32(end, crc)
	end = binary.LittleEndian.AppendUint32(end, uint32(total))
	out.AppendBody(end)
}
