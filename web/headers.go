package web

import (
	"strings"

	"github.com/gofiber/fiber/v2"
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
func securityHeaders(c *fiber.Ctx) error {
	setSecurityHeaders(&c.Response().Header, c.Path(), c.Protocol() == "https")
	return c.Next()
}

func setSecurityHeaders(h *fasthttp.ResponseHeader, path string, tls bool) {
	csp := pageCSP
	if strings.HasPrefix(path, MonitorPath) {
		csp = monitorCSP
	}
	h.Set(fiber.HeaderContentSecurityPolicy, csp)
	h.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	h.Set(fiber.HeaderReferrerPolicy, "same-origin")
	h.Set(fiber.HeaderXFrameOptions, "DENY")
	if tls {
		h.Set(fiber.HeaderStrictTransportSecurity, "max-age=31536000")
	}
}
