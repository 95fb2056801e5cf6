package web

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// The middleware every read passes reads and writes headers without the
// allocations of the obvious code; each is held here to the obvious code
// it replaced, over inputs odd ones included.

func TestIsTextAsBefore(t *testing.T) {
	before := func(ct []byte) bool {
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
	for _, ct := range []string{"", "text/css", "Text/HTML; charset=utf-8", " TEXT/plain ", "text", "text/", "application/json",
		"application/javascript", "APPLICATION/JAVASCRIPT;x=1", "image/svg+xml", "image/SVG+XML", "application/xml", "Application/XML",
		"application/xmlx", "application/xm", "application/x", "image/png", "tExt/\u212a", "appl\u0130cation/xml", "\xfftext/x",
		"text\xff/x", "application/x\xffml", ";text/html", "application/ecmascript", "text/javascript; charset=utf-8"} {
		if got, want := isText([]byte(ct)), before([]byte(ct)); got != want {
			t.Errorf("isText(%q) = %v, before %v", ct, got, want)
		}
		if got, want := containsLower([]byte(ct), "charset="), bytes.Contains(bytes.ToLower([]byte(ct)), []byte("charset=")); got != want {
			t.Errorf("containsLower(%q) = %v, before %v", ct, got, want)
		}
	}
	for _, ct := range []string{"text/css; CHARSET=utf-8", "text/css;charset=x", "text/css; charset", "text/css; chars\u212aet=", "charset="} {
		if got, want := containsLower([]byte(ct), "charset="), bytes.Contains(bytes.ToLower([]byte(ct)), []byte("charset=")); got != want {
			t.Errorf("containsLower(%q) = %v, before %v", ct, got, want)
		}
	}
}

func TestClientAddrAsBefore(t *testing.T) {
	before := func(peer netip.Addr, xff string, trusted []netip.Prefix) netip.Addr {
		peer = peer.Unmap()
		if !inPrefixes(peer, trusted) || xff == "" {
			return peer
		}
		hops := strings.Split(xff, ",")
		for i := len(hops) - 1; i >= 0; i-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				return peer
			}
			a = a.Unmap()
			if !inPrefixes(a, trusted) {
				return a
			}
			peer = a
		}
		return peer
	}
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	peers := []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("::1"), netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("::ffff:10.0.0.9")}
	for _, xff := range []string{"", "1.2.3.4", " 1.2.3.4 ", "1.2.3.4, 10.0.0.2", "10.0.0.2,10.0.0.3", "garbage", "1.2.3.4,,10.0.0.2",
		",", "1.2.3.4,", ",1.2.3.4", "5.6.7.8, garbage, 10.0.0.7", "2001:db8::1, ::1", "::ffff:1.2.3.4", "10.0.0.1, 10.0.0.2, 10.0.0.3"} {
		for _, p := range peers {
			for _, tr := range [][]netip.Prefix{nil, trusted} {
				if got, want := clientAddr(p, xff, tr), before(p, xff, tr); got != want {
					t.Errorf("clientAddr(%v, %q, %v) = %v, before %v", p, xff, tr, got, want)
				}
			}
		}
	}
}

// https is c.Protocol() == "https" for every peer, trusted or not, and
// every header that may name a scheme.
func TestHTTPSAsProtocol(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}
	heads := [][]string{nil, {"X-Forwarded-Proto", "https"}, {"X-Forwarded-Proto", "http"}, {"X-Forwarded-Proto", "https, http"},
		{"X-Forwarded-Proto", "HTTPS"}, {"X-Forwarded-Protocol", "https"}, {"X-Forwarded-Ssl", "on"}, {"X-Forwarded-Ssl", "off"},
		{"X-Url-Scheme", "https"}, {"X-Forwarded-Ssl", "on", "X-Forwarded-Proto", "http"}, {"X-Forwarded-Proto", "http", "X-Forwarded-Ssl", "on"},
		{"X-Forwarded-Proto", "https", "X-Url-Scheme", "http"}, {"X-Forwarded-For", "1.2.3.4"}, {"x-forwarded-proto", "https"}}
	peers := []net.Addr{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1},
		&net.TCPAddr{IP: net.ParseIP("2001:db8::5"), Port: 1}, &net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.2"), Port: 1}}
	overTLS := 0
	for _, tr := range [][]netip.Prefix{nil, trusted} {
		s := &Server{trusted: tr}
		app := fiber.New(fiber.Config{EnableTrustedProxyCheck: true, TrustedProxies: prefixStrings(tr)})
		for _, peer := range peers {
			for _, h := range heads {
				var ctx fasthttp.RequestCtx
				var req fasthttp.Request
				req.SetRequestURI("/")
				for i := 0; i+1 < len(h); i += 2 {
					req.Header.Add(h[i], h[i+1])
				}
				ctx.Init(&req, peer, nil)
				c := app.AcquireCtx(&ctx)
				got, want := s.https(c), c.Protocol() == "https"
				if got != want {
					t.Errorf("trusted %v, peer %v, headers %q: https %v, c.Protocol() says %v", tr, peer, h, got, want)
				}
				if want {
					overTLS++
				}
				app.ReleaseCtx(c)
			}
		}
	}
	if overTLS == 0 {
		t.Fatal("no case came over TLS: the comparison proves nothing")
	}
}

func TestSecurityHeadersAsSet(t *testing.T) {
	for _, path := range []string{"/", MonitorPath + "/x"} {
		for _, tls := range []bool{false, true} {
			var got, want fasthttp.ResponseHeader
			setSecurityHeaders(&got, path, tls)
			csp := pageCSP
			if strings.HasPrefix(path, MonitorPath) {
				csp = monitorCSP
			}
			want.Set(fiber.HeaderContentSecurityPolicy, csp)
			want.Set(fiber.HeaderXContentTypeOptions, "nosniff")
			want.Set(fiber.HeaderReferrerPolicy, "same-origin")
			want.Set(fiber.HeaderXFrameOptions, "DENY")
			if tls {
				want.Set(fiber.HeaderStrictTransportSecurity, "max-age=31536000")
			}
			if got.String() != want.String() {
				t.Errorf("%s (TLS %v):\n%s\nwant\n%s", path, tls, got.String(), want.String())
			}
		}
	}
}
