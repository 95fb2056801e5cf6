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
func (d *splicedDoc) send(c *fiber.Ctx, user, csrf string) error {
	values := [2]string{holeUser: html.EscapeString(user), holeCSRF: html.EscapeString(csrf)}
	h := fnv.New64a()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], d.etag)
	h.Write(n[:])
	h.Write([]byte(values[holeUser]))
	h.Write([]byte{0})
	h.Write([]byte(values[holeCSRF]))
	etag := `W/"s` + strconv.FormatUint(h.Sum64(), 36) + `"`

	rh := &c.Response().Header
	rh.SetCanonical(headerCacheControl, utils.UnsafeBytes(cachePrivate))
	rh.SetCanonical(headerETag, utils.UnsafeBytes(etag))
	varyEncoding(c, []string{fiber.HeaderCookie})
	if etagMatches(utils.UnsafeString(c.Request().Header.PeekCanonical(headerIfNoneMatch)), etag) {
		c.Status(fiber.StatusNotModified)
		return nil
	}
	rh.SetContentType(typeHTML)
	if encodingOf(utils.UnsafeString(c.Request().Header.PeekCanonical(headerAcceptEncoding))) == "" {
		out := make([]byte, 0, d.size+len(d.holes)*64)
		for i, p := range d.parts {
			out = append(out, p...)
			if i < len(d.holes) {
				out = append(out, values[d.holes[i]]...)
			}
		}
		return c.Send(out)
	}
	rh.SetContentEncoding("gzip")
	return c.Send(d.gzip(values))
}

// gzip is the page with values in its holes as one gzip member (RFC 1952):
// the parts' deflate blocks, each value a stored block (RFC 1951 3.2.4),
// a final empty stored block, then the CRC-32 and length of the whole.
func (d *splicedDoc) gzip(values [2]string) []byte {
	size := 10 + 5 + 8
	for _, g := range d.gz {
		size += len(g)
	}
	for _, k := range d.holes {
		size += 5 + len(values[k])
	}
	out := make([]byte, 0, size)
	out = append(out, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255) // deflate, no flags, no time, unknown OS
	crc := uint32(0)
	total := 0
	for i, g := range d.gz {
		out = append(out, g...)
		crc = crc32.Update(crc, crc32.IEEETable, d.parts[i])
		total += len(d.parts[i])
		if i < len(d.holes) {
			v := values[d.holes[i]]
			for len(v) > 0 { // a stored block holds at most 65535 bytes
				chunk := v[:min(len(v), 65535)]
				out = append(out, 0, byte(len(chunk)), byte(len(chunk)>>8), ^byte(len(chunk)), ^byte(len(chunk)>>8))
				out = append(out, chunk...)
				crc = crc32.Update(crc, crc32.IEEETable, []byte(chunk))
				total += len(chunk)
				v = v[len(chunk):]
			}
		}
	}
	out = append(out, 1, 0, 0, 0xff, 0xff) // the final block, stored and empty
	out = binary.LittleEndian.AppendUint32(out, crc)
	out = binary.LittleEndian.AppendUint32(out, uint32(total))
	return out
}
