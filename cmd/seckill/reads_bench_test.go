package main

import (
	"fmt"
	"net"
	"testing"

	"github.com/seckill/seckill/static"
	"github.com/seckill/seckill/web/ratelimit"
	"github.com/valyala/fasthttp"
)

// BenchmarkReadsHandler is the CPU a shopper's read costs the web process
// beyond the no-op's (GET /healthz): the whole Fiber chain, middleware and
// handler, called in process with no connection, so what it measures is the
// server's own work on a request and not the network's. Readers take turns
// among 2000 forwarded addresses, as the crowd bench's do.
//
//	go test -run '^$' -bench ReadsHandler -benchmem ./cmd/seckill
func BenchmarkReadsHandler(b *testing.B) {
	a := startApp(b, func(c *Config) {
		c.TrustedProxies = "127.0.0.1/32"
		c.RateIP = ratelimit.Rate{} // the bench's readers stay far below their limit; here one address would not
	})
	_, g := a.liveGoods(10, 5)
	alice, _ := a.newUser()
	handler := a.Web.App.Handler()
	peer := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}

	etag := func(path string) string {
		var ctx fasthttp.RequestCtx
		ctx.Init(new(fasthttp.Request), peer, nil)
		ctx.Request.SetRequestURI(path)
		handler(&ctx)
		return string(ctx.Response.Header.Peek("ETag"))
	}
	goodsJSON := fmt.Sprintf("/api/goods/%d", g.ID)
	reads := []struct {
		name, path, inm, cookie string
	}{
		{"noop", "/healthz", "", ""},
		{"front", "/", "", ""},
		{"goods-page", fmt.Sprintf("/goods/%d", g.ID), "", ""},
		{"goods-json", goodsJSON, "", ""},
		{"slot-goods", fmt.Sprintf("/api/slots/%d/goods", g.SlotID), "", ""},
		{"slots", "/api/slots", "", ""},
		{"static", static.URL("app.css"), "", ""},
		{"304", goodsJSON, etag(goodsJSON), ""},
		{"goods-json-signed", goodsJSON, "", alice},
		{"front-signed", "/", "", alice},
		{"goods-page-signed", fmt.Sprintf("/goods/%d", g.ID), "", alice},
		{"304-signed", goodsJSON, etag(goodsJSON), alice},
	}
	for _, rd := range reads {
		b.Run(rd.name, func(b *testing.B) {
			reqs := make([]fasthttp.Request, 2000)
			for j := range reqs {
				r := &reqs[j]
				r.SetRequestURI(rd.path)
				r.Header.Set("X-Forwarded-For", fmt.Sprintf("10.1.%d.%d", j/250, j%250+1))
				r.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
				if rd.inm != "" {
					r.Header.Set("If-None-Match", rd.inm)
				}
				if rd.cookie != "" {
					r.Header.SetCookie("seckill_session", rd.cookie)
				}
			}
			var ctx fasthttp.RequestCtx
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				ctx.Init(&reqs[i%len(reqs)], peer, nil)
				handler(&ctx)
				if st := ctx.Response.StatusCode(); st != 200 && st != 304 {
					b.Fatalf("GET %s: %d", rd.path, st)
				}
				ctx.Response.Reset()
			}
		})
	}
}
