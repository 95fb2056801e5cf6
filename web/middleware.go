package web

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/handlers"
)

// authenticate reads a bearer token or the session cookie; a valid one becomes
// the caller's claims. It costs no look-up: the token is signed.
func (s *Server) authenticate(c *fiber.Ctx) error {
	token := ""
	if h := c.Get(fiber.HeaderAuthorization); strings.HasPrefix(h, "Bearer ") {
		token = strings.TrimPrefix(h, "Bearer ")
		cl, err := s.tokens.Verify(token)
		if err != nil {
			return err // an explicit bad token is refused, never treated as anonymous
		}
		handlers.SetClaims(c, cl)
		return c.Next()
	}
	if token = c.Cookies(handlers.SessionCookie); token != "" {
		if cl, err := s.tokens.Verify(token); err == nil {
			handlers.SetClaims(c, cl)
		} else if strings.HasPrefix(c.Path(), "/api") {
			return err
		}
	}
	return c.Next()
}

// requireRole lets through callers holding one of roles: 401 when anonymous, 403 otherwise.
func requireRole(roles ...string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		cl, ok := handlers.ClaimsOf(c)
		if !ok {
			return db.ErrUnauthorized
		}
		for _, r := range roles {
			if cl.Role == r {
				return c.Next()
			}
		}
		return db.ErrForbidden
	}
}

// requireUser lets through any logged-in caller.
func requireUser(c *fiber.Ctx) error {
	if _, ok := handlers.ClaimsOf(c); !ok {
		return db.ErrUnauthorized
	}
	return c.Next()
}

const csrfCookie = "seckill_csrf"

// csrf protects HTML form posts: every page gets a token tied to a random
// cookie (signed, so a planted cookie does not help), and every form post
// outside /api must send it back in _csrf.
func (s *Server) csrf(c *fiber.Ctx) error {
	nonce := c.Cookies(csrfCookie)
	if nonce == "" {
		var b [18]byte
		rand.Read(b[:])
		nonce = base64.RawURLEncoding.EncodeToString(b[:])
		c.Cookie(&fiber.Cookie{Name: csrfCookie, Value: nonce, Path: "/", HTTPOnly: true, SameSite: "Lax", Secure: c.Protocol() == "https"})
	}
	want := s.tokens.MAC("csrf:" + nonce)
	handlers.SetCSRF(c, want)
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	got := c.FormValue("_csrf")
	if got == "" {
		got = c.Get("X-CSRF-Token")
	}
	if got != want {
		return db.Errorf(db.EFORBIDDEN, "the form has expired; reload the page and try again")
	}
	return c.Next()
}

// observe records request counts and latency by route.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	status := c.Response().StatusCode()
	if err != nil {
		if fe, ok := err.(*fiber.Error); ok {
			status = fe.Code
		} else {
			status = statusOf[db.ErrorCode(err)]
		}
	}
	s.metrics.observe(c.Method(), c.Route().Path, status, time.Since(start).Seconds())
	return err
}
