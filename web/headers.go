package web

import (
	"bytes"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/valyala/fasthttp"
)

// pageCSP lets pages run only this site's scripts: the views have no inline
// <script> or on*= handlers. Some elements carry inline styles, hence
// 'unsafe-inline' for styles only. /ws is reached over ws: or wss:.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"

// monitorCSP is Asynqmon's: its index.html sets its flags and webpack's
// runtime in two inline <script>s, its Material UI injects <style>s, and it
// loads Roboto from Google Fonts. Only admins reach it.
const monitorCSP = "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline' https://fonts.googleapis.com; " +
	"font-src 'self' https://fonts.gstatic.com; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; " +
	"base-uri 'self'; form-action 'self'; object-src 'none'"

// securityHeaders sets the headers every response carries (/healthz, which
// runs before it, excepted to stay the load bench's floor).
func (s *Server) securityHeaders(c *fiber.Ctx) error {
	setSecurityHeaders(&c.Response().Header, c.Path(), s.https(c))
	return c.Next()
}

// The security headers' names, as fasthttp keeps them, and values: set as
// they are, a response pays no normalising of names.
var (
	headerCSP            = headerKey(fiber.HeaderContentSecurityPolicy)
	headerNoSniff        = headerKey(fiber.HeaderXContentTypeOptions)
	headerReferrerPolicy = headerKey(fiber.HeaderReferrerPolicy)
	headerFrameOptions   = headerKey(fiber.HeaderXFrameOptions)
	headerHSTS           = headerKey(fiber.HeaderStrictTransportSecurity)
	valuePageCSP         = []byte(pageCSP)
	valueMonitorCSP      = []byte(monitorCSP)
	valueNoSniff         = []byte("nosniff")
	valueSameOrigin      = []byte("same-origin")
	valueDeny            = []byte("DENY")
	valueHSTS            = []byte("max-age=31536000")
)

// headerKey is a header's name as fasthttp keeps it.
func headerKey(name string) []byte { return fasthttp.AppendNormalizedHeaderKey(nil, name) }

// requestHeader is c.Get of a name from headerKey, which it need not
// normalise again: valid, like c.Get's, until the request ends.
func requestHeader(c *fiber.Ctx, key []byte) string {
	return utils.UnsafeString(c.Request().Header.PeekCanonical(key))
}

func setSecurityHeaders(h *fasthttp.ResponseHeader, path string, tls bool) {
	csp := valuePageCSP
	if strings.HasPrefix(path, MonitorPath) {
		csp = valueMonitorCSP
	}
	h.SetCanonical(headerCSP, csp)
	h.SetCanonical(headerNoSniff, valueNoSniff)
	h.SetCanonical(headerReferrerPolicy, valueSameOrigin)
	h.SetCanonical(headerFrameOptions, valueDeny)
	if tls {
		h.SetCanonical(headerHSTS, valueHSTS)
	}
}

// https reports whether the request came over TLS: c.Protocol() == "https",
// which believes X-Forwarded-Proto and its kin from trusted proxies only.
// Fiber's own check formats the peer's address as text on every request;
// here the peer's address is compared as it is, and the headers read as
// Fiber reads them (the last one that names a scheme decides).
func (s *Server) https(c *fiber.Ctx) bool {
	if c.Context().IsTLS() {
		return true
	}
	if len(s.trusted) == 0 || !inPrefixes(peerAddr(c.Context().RemoteAddr()), s.trusted) {
		return false
	}
	https := false
	for key, val := range c.Request().Header.All() {
		switch {
		case bytes.Equal(key, headerForwardedProto), bytes.Equal(key, headerForwardedProtocol):
			if i := bytes.IndexByte(val, ','); i >= 0 {
				val = val[:i]
			}
			https = string(val) == "https"
		case bytes.Equal(key, headerForwardedSSL):
			https = https || string(val) == "on"
		case bytes.Equal(key, headerURLScheme):
			https = string(val) == "https"
		}
	}
	return https
}

// The headers that may name a scheme, compared as Fiber compares them.
var (
	headerForwardedProto    = []byte(fiber.HeaderXForwardedProto)
	headerForwardedProtocol = []byte(fiber.HeaderXForwardedProtocol)
	headerForwardedSSL      = []byte(fiber.HeaderXForwardedSsl)
	headerURLScheme         = []byte(fiber.HeaderXUrlScheme)
)
