package handlers

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/views/i18n"
	"github.com/valyala/fasthttp"
)

// A shared read's headers are read and written without the allocations of
// the obvious code; each is held here to the obvious code it replaced.

func TestEncodingOfAsBefore(t *testing.T) {
	before := func(ae string) string {
		if ae == "" {
			return ""
		}
		var gzip bool
		for _, part := range strings.Split(ae, ",") {
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
	for _, ae := range []string{"", "gzip", "br", "gzip, deflate, br, zstd", "gzip, deflate", "BR", " Gzip ", "br;q=0", "br;q=0, gzip",
		"br; q=0.5", "br;q=x, gzip;q=1", "gzip;q=0", "identity", "*", ",", ",,br", "gzip,", "deflate, gzİp", "br ;q=0.001",
		"gzip;level=1", "gzip;q=1;level=2", "br;q= 0", "compress, gzip;q=0.5"} {
		if got, want := encodingOf(ae), before(ae); got != want {
			t.Errorf("encodingOf(%q) = %q, before %q", ae, got, want)
		}
	}
}

func TestETagMatchesAsBefore(t *testing.T) {
	before := func(header, etag string) bool {
		if header == "" || len(header) > 1024 {
			return false
		}
		if strings.TrimSpace(header) == "*" {
			return true
		}
		want := strings.TrimPrefix(etag, "W/")
		for _, t := range strings.Split(header, ",") {
			if strings.TrimPrefix(strings.TrimSpace(t), "W/") == want {
				return true
			}
		}
		return false
	}
	etag := `W/"abc"`
	for _, h := range []string{"", `W/"abc"`, `"abc"`, ` W/"abc" `, `"x", W/"abc"`, `W/"abc",`, `,W/"abc"`, `*`, ` * `, `"abcd"`, `W/"ab"`,
		`,,,`, `W/""`, strings.Repeat("x", 2000), `"x",  "abc"`, `W/W/"abc"`} {
		if got, want := etagMatches(h, etag), before(h, etag); got != want {
			t.Errorf("etagMatches(%q) = %v, before %v", h, got, want)
		}
	}
}

// The Vary a shared read answers with is what c.Vary makes, whatever the
// request passed before (Language, or nothing for a static file).
func TestVaryAsFiber(t *testing.T) {
	app := fiber.New()
	for _, held := range []string{"", "Accept-Language, Cookie", "Cookie", "Origin", "Accept-Language, Cookie, Origin"} {
		for _, vary := range [][]string{nil, {fiber.HeaderCookie}, {fiber.HeaderAcceptLanguage, fiber.HeaderCookie}, {"Origin"}} {
			var a, b fasthttp.RequestCtx
			ca, cb := app.AcquireCtx(&a), app.AcquireCtx(&b)
			if held != "" {
				ca.Set(fiber.HeaderVary, held)
				cb.Set(fiber.HeaderVary, held)
			}
			varyEncoding(ca, vary)
			cb.Vary(append(vary, fiber.HeaderAcceptEncoding)...)
			if got, want := string(a.Response.Header.Peek("Vary")), string(b.Response.Header.Peek("Vary")); got != want {
				t.Errorf("Vary %q, adding %q: %q, c.Vary makes %q", held, vary, got, want)
			}
			app.ReleaseCtx(ca)
			app.ReleaseCtx(cb)
		}
	}
	// Language on an answer with no Vary yet, and with one.
	for _, held := range []string{"", "Origin"} {
		vary := func(language fiber.Handler) string {
			app := fiber.New()
			app.Get("/", func(c *fiber.Ctx) error {
				if held != "" {
					c.Set(fiber.HeaderVary, held)
				}
				return c.Next()
			}, language, func(c *fiber.Ctx) error { return nil })
			var ctx fasthttp.RequestCtx
			ctx.Request.SetRequestURI("/")
			app.Handler()(&ctx)
			return string(ctx.Response.Header.Peek("Vary"))
		}
		got := vary((&Site{}).Language)
		want := vary(func(c *fiber.Ctx) error { c.Vary(fiber.HeaderAcceptLanguage, fiber.HeaderCookie); return c.Next() })
		if got != want || want == "" {
			t.Errorf("Language on Vary %q: %q, c.Vary makes %q", held, got, want)
		}
	}
}

// The language a browser's Accept-Language names is the same read again
// from memory.
func TestAcceptLanguageRemembered(t *testing.T) {
	for _, h := range []string{"", "zh-CN,zh;q=0.9,en;q=0.8", "en-US,en;q=0.9", "fr", "en;q=0.1, zh;q=0.5", "zh;q=0"} {
		for range 2 {
			if got, want := acceptLanguage(h), i18n.FromAcceptLanguage(h); got != want {
				t.Errorf("acceptLanguage(%q) = %q, want %q", h, got, want)
			}
		}
	}
}
